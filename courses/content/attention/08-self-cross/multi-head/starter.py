import numpy as np


def multi_head(X, W_q, W_k, W_v, W_o):
    """Çok başlı self-attention (maskesiz).

    X   : (n, d_model)
    W_q : (h, d_model, d_k)   W_k : (h, d_model, d_k)   W_v : (h, d_model, d_v)
    W_o : (h * d_v, d_model)
    dönüş: (n, d_model)
    """
    Q = ...                      # (h, n, d_k): her head için ayrı Query'ler
    K = ...
    V = ...
    # Her head'de ölçeklendirilmiş attention: devrik için yalnızca son iki eksen!
    heads = ...                  # (h, n, d_v)
    # Head'leri birleştirin: (n, h * d_v); tokenlar karışmasın
    concat = ...
    return ...
