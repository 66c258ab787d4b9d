import numpy as np


def blend(a, X, W_v):
    # Yanlış: örneğin cevabı gömülü
    return np.array([2.5, 2.5])
