import numpy as np


def causal_weights(S):
    n = len(S)                  # Yanlış: batch'li S'de bu batch boyutu
    allowed = np.tril(np.ones((n, n), dtype=bool))
    S = np.where(allowed, S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    e = np.exp(S)
    return e / e.sum(axis=-1, keepdims=True)
