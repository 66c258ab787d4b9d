import numpy as np


def queries(X, W_q):
    """Bütün tokenların Query vektörlerini döndürür.

    X   : (n, d_model)  her satır bir tokenın embedding'i
    W_q : (d_model, d_k) öğrenilmiş Query matrisi
    dönüş: (n, d_k)      her satır bir tokenın Query'si
    """
    Q = ...
    return Q
