import numpy as np


def key_scores(q, X, W_k):
    # Yanlış: W_k atlanmış, Query ham temsillerle karşılaştırılıyor
    return X[:, : q.shape[0]] @ q
