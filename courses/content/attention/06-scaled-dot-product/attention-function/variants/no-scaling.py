import numpy as np


def attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    S = Q @ np.swapaxes(K, -1, -2)          # Yanlış: ölçekleme yok
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    A = np.exp(S)
    A = A / A.sum(axis=-1, keepdims=True)
    return A @ V
