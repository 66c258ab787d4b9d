import numpy as np


def shift(x, a, V):
    return np.array([2.4, 1.0])   # Yanlış: dersteki sonuç gömülü
