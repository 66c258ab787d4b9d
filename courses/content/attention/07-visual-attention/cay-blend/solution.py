import numpy as np


def shift(x, a, V):
    return x + a @ V
