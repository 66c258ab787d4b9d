import numpy as np


def causal_weights(S):
    """Causal attention ağırlıkları.

    S    : (..., n, n) ölçeklendirilmiş skorlar (satır: Query, sütun: Key)
    dönüş: (..., n, n) her satırı 1'e toplanan ağırlıklar; j > i konumları 0
    """
    n = ...                      # token sayısı
    # 1) (n, n) boolean maske: True = bakılabilir (köşegen ve altı)
    allowed = ...
    # 2) Yasaklı skorları -inf yapın
    S = ...
    # 3) Son eksen boyunca kararlı softmax
    ...
