import numpy as np


def cross_attention(X_text, X_image, W_q, W_k, W_v):
    Q = X_text @ W_q
    K = X_image @ W_k
    V = X_image @ W_v
    S = Q @ K.T           # Yanlış: ölçekleme yok
    S = S - S.max(axis=-1, keepdims=True)
    A = np.exp(S)
    A = A / A.sum(axis=-1, keepdims=True)
    return A @ V
