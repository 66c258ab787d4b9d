import numpy as np


def key_scores(q, X, W_k):
    """Tek bir Query'nin bütün Key'lerle ham skorları.

    q   : (d_k,)          bir tokenın Query vektörü
    X   : (n, d_model)    tokenların temsilleri
    W_k : (d_model, d_k)  öğrenilmiş Key matrisi
    dönüş: (n,)           j. eleman q · k_j
    """
    # 1) Bütün tokenların Key'leri: K'nın şekli (n, d_k) olmalı
    K = ...
    # 2) q'yu her Key ile karşılaştırın (nokta çarpımı)
    s = ...
    return s
