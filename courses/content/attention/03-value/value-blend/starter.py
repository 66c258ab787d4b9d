import numpy as np


def blend(a, X, W_v):
    """Bir tokenın attention çıktısı: Value'ların ağırlıklı toplamı.

    a   : (n,)            attention ağırlıkları (toplamı 1)
    X   : (n, d_model)    tokenların temsilleri
    W_v : (d_model, d_v)  öğrenilmiş Value matrisi
    dönüş: (d_v,)
    """
    # 1) Bütün tokenların Value'ları, şekli (n, d_v)
    V = ...
    # 2) Her Value'yu kendi ağırlığıyla çarpıp toplayın
    y = ...
    return y
