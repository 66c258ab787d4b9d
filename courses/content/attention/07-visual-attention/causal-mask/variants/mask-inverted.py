import numpy as np


def causal_weights(S):
    n = S.shape[-1]
    allowed = np.triu(np.ones((n, n), dtype=bool))   # Yanlış: gelecek serbest
    S = np.where(allowed, S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    e = np.exp(S)
    return e / e.sum(axis=-1, keepdims=True)
