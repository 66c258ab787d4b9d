import numpy as np


def queries(X, W_q):
    # Yanlış: eleman eleman çarpım (yalnızca boyutlar tesadüfen uyarsa çalışır)
    return X[:, : W_q.shape[1]] * W_q[: X.shape[0], :]
