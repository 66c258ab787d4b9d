import numpy as np


def queries(X, W_q):
    # Yanlış: sonuç devrik, sütunlar tokenlar
    return W_q.T @ X.T
