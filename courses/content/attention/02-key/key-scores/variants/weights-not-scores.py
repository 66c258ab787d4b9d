import numpy as np


def key_scores(q, X, W_k):
    # Yanlış: ham skor yerine softmax ağırlıkları
    s = (X @ W_k) @ q
    e = np.exp(s - s.max())
    return e / e.sum()
