import numpy as np


def attention(Q, K, V, mask=None):
    """Scaled dot-product attention.

    Q    : (..., n_q, d_k)
    K    : (..., n_k, d_k)
    V    : (..., n_k, d_v)
    mask : None ya da (..., n_q, n_k)'ya yayınlanabilen boolean dizi; True = bakılabilir
    dönüş: (..., n_q, d_v)
    """
    d_k = ...                    # Query/Key boyutu
    # 1) Ölçeklendirilmiş skorlar, şekli (..., n_q, n_k)
    S = ...
    # 2) Maske: yasaklı (False) konumlar softmax'tan sonra sıfır ağırlık almalı
    if mask is not None:
        S = ...
    # 3) Son eksen boyunca kararlı softmax
    A = ...
    # 4) Value'ları harmanlayın
    return ...
