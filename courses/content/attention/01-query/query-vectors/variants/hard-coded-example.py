import numpy as np


def queries(X, W_q):
    # Yanlış: dersteki örneğin cevabı elle yazılmış
    return np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
