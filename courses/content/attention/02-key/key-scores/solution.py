import numpy as np


def key_scores(q, X, W_k):
    K = X @ W_k          # (n, d_k)
    return K @ q         # (n,): her Key ile nokta çarpımı
