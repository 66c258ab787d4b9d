import numpy as np


def key_scores(q, X, W_k):
    # Yanlış: çarpımlar toplanmamış
    return (X @ W_k) * q
