import numpy as np


def queries(X, W_q):
    # Yanlış: yalnızca ilk tokenın Query'si
    return X[0] @ W_q
