import numpy as np


def shift(x, a, V):
    """"çay"ın bağlama göre kaymış vektörü.

    x : (d,)    kelimenin kendi vektörü
    a : (n,)    attention ağırlıkları (toplamı 1)
    V : (n, d)  tokenların Value'ları
    dönüş: (d,)
    """
    karisim = ...       # Value'ların ağırlıklı toplamı
    return ...          # karışımı kelimenin kendi vektörüne ekleyin
