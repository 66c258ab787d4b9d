import numpy as np


def blend(a, X, W_v):
    V = X @ W_v          # (n, d_v)
    return a @ V         # (d_v,): Σ_j a_j v_j
