import numpy as np


def key_scores(q, X, W_k):
    # Yanlış: W_k devrik kullanılmış (yalnızca kare W_k'da çalışır)
    return (X @ W_k.T) @ q
