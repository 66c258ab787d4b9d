import numpy as np


def cross_attention(X_text, X_image, W_q, W_k, W_v):
    """Metin tokenları (Query) görüntü yamalarına (Key, Value) bakar.

    X_text  : (n_q, d_text)     X_image : (n_k, d_image)
    W_q     : (d_text, d_k)     W_k     : (d_image, d_k)     W_v : (d_image, d_v)
    dönüş   : (n_q, d_v)
    """
    Q = ...   # hangi kaynaktan?
    K = ...
    V = ...
    # Skorlar, ölçekleme, satır başına softmax, Value'ların harmanı
    ...
