import numpy as np


def queries(X, W_q):
    """Bütün tokenların Query vektörleri: Q = X W^Q."""
    return X @ W_q
