import numpy as np


def shift(x, a, V):
    return x + V.mean(axis=0)   # Yanlış: ağırlıklar yok sayılmış
