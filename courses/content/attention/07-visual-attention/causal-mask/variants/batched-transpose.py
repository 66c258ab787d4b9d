import numpy as np


def causal_weights(S):
    n = S.shape[-1]
    allowed = np.triu(np.ones(S.shape, dtype=bool)).T   # Yanlış: .T batch'te bütün eksenleri çevirir
    S = np.where(allowed, S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    e = np.exp(S)
    return e / e.sum(axis=-1, keepdims=True)
