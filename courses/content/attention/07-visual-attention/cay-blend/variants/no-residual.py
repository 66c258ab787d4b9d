import numpy as np


def shift(x, a, V):
    return a @ V            # Yanlış: kelimenin kendi vektörü eklenmemiş
