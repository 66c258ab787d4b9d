import numpy as np


def _random_mask(rng, shape):
    mask = rng.random(shape) < 0.5
    # her satırda en az bir izin: rastgele bir sütunu aç
    n_k = shape[-1]
    idx = rng.integers(0, n_k, size=shape[:-1])
    np.put_along_axis(mask, idx[..., None], True, axis=-1)
    return mask


def make_cases(rng):
    N = rng.normal
    cases = []

    def add(name, Q, K, V, mask=None):
        inputs = {"Q": Q, "K": K, "V": V}
        if mask is not None:
            inputs["mask"] = mask
        cases.append({"name": name, "hidden": True, "inputs": inputs})

    # 2 boyutlu, kare
    add("iki-boyut", N(size=(4, 3)), N(size=(4, 3)), N(size=(4, 3)))
    # d_k != d_v ve n_q != n_k
    add("dk-dv-farkli", N(size=(3, 2)), N(size=(5, 2)), N(size=(5, 7)))
    # Batch'li durumlarda batch = n_k = d_k seçildi: böylece `K.T` hatası bir istisna yerine
    # yanlış değerler üretir ve öğrenciye batched-transpose ipucu gösterilebilir.
    # batch ve head eksenleri: (3, 3, n_q, d_k), n_q != n_k, d_k != d_v
    add("batch-head", N(size=(3, 3, 2, 3)), N(size=(3, 3, 3, 3)), N(size=(3, 3, 3, 4)))
    # büyük skorlar (~1000): max çıkarılmazsa exp taşar
    add("buyuk-skor", 25.0 + N(size=(3, 4)), 25.0 + N(size=(5, 4)), N(size=(5, 2)))
    # causal maske, 2 boyutlu
    n = 5
    add("causal-2d", N(size=(n, 4)), N(size=(n, 4)), N(size=(n, 3)), np.tril(np.ones((n, n), dtype=bool)))
    # rastgele maske, 2 boyutlu, n_q != n_k
    add("maske-2d", N(size=(4, 3)), N(size=(6, 3)), N(size=(6, 2)), _random_mask(rng, (4, 6)))
    # causal maske 2 boyutlu, girdiler batch'li (yayınlama)
    add(
        "causal-batch",
        N(size=(4, 4, 4)),
        N(size=(4, 4, 4)),
        N(size=(4, 4, 2)),
        np.tril(np.ones((4, 4), dtype=bool)),
    )
    # batch'li rastgele maske
    add("maske-batch", N(size=(3, 2, 3)), N(size=(3, 3, 3)), N(size=(3, 3, 5)), _random_mask(rng, (3, 2, 3)))
    # padding maskesi (batch, 1, n_k)
    pad = np.ones((5, 1, 5), dtype=bool)
    for b, length in enumerate([5, 3, 4, 1, 2]):
        pad[b, 0, length:] = False
    add("padding-batch", N(size=(5, 3, 5)), N(size=(5, 5, 5)), N(size=(5, 5, 2)), pad)
    return cases
