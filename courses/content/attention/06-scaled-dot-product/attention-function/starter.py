import numpy as np


def attention(Q, K, V, mask=None):
    """Scaled dot-product attention.

    Q    : (..., n_q, d_k)
    K    : (..., n_k, d_k)
    V    : (..., n_k, d_v)
    mask : None ya da (..., n_q, n_k)'ya yayınlanabilen boolean dizi; True = bakılabilir
    dönüş: (..., n_q, d_v)
    """
    d_k = ...                    # Q'nun son ekseni
    # 1) Skorlar: Q ile K'nın devriği. Batch'li girdilerde yalnızca SON İKİ ekseni değiştirin.
    S = ...
    # 2) Maske: yasaklı (False) yerlerin skoru -inf olsun (np.where işinize yarar)
    if mask is not None:
        S = ...
    # 3) Son eksen boyunca kararlı softmax (önce satırın en büyüğünü çıkarın)
    A = ...
    # 4) Value'ları harmanlayın
    return ...
