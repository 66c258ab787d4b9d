import numpy as np


def multi_head(X, W_q, W_k, W_v, W_o):
    Q = X @ W_q                                   # (h, n, d_k)
    K = X @ W_k
    V = X @ W_v                                   # (h, n, d_v)
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    S = S - S.max(axis=-1, keepdims=True)
    A = np.exp(S)
    A = A / A.sum(axis=-1, keepdims=True)
    heads = A @ V                                 # (h, n, d_v)
    h, n, d_v = heads.shape
    concat = np.transpose(heads, (1, 0, 2)).reshape(n, h * d_v)
    return concat                                 # Yanlış: W_o yok
