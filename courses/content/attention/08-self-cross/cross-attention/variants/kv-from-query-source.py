import numpy as np


def cross_attention(X_text, X_image, W_q, W_k, W_v):
    Q = X_text @ W_q
    K = X_text @ W_k      # Yanlış: self-attention
    V = X_text @ W_v
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    S = S - S.max(axis=-1, keepdims=True)
    A = np.exp(S)
    A = A / A.sum(axis=-1, keepdims=True)
    return A @ V
