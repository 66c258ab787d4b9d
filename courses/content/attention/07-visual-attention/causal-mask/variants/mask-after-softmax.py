import numpy as np


def causal_weights(S):
    n = S.shape[-1]
    allowed = np.tril(np.ones((n, n), dtype=bool))
    S = S - S.max(axis=-1, keepdims=True)
    e = np.exp(S)
    A = e / e.sum(axis=-1, keepdims=True)
    return A * allowed          # Yanlış: softmax'tan sonra, yeniden normalleme yok
