import numpy as np


def shift(x, a, V):
    return np.array([2.64, 1.05])   # Yanlış: dersteki sonuç gömülü
