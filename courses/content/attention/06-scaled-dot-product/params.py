"""Per-student numbers for the scaled dot-product lesson's questions (see docs/authoring.md,
"Variants").

Each function gets a seeded ``rng`` and returns the parameters one variant of its question is
filled in with; every shape is computed here with NumPy from those parameters.
"""

import numpy as np


def shapes(rng):
    """sdp-shapes: four different sizes, so that the seven shapes (five answers, two
    distractors) are all different; each shape is read off the arrays NumPy computes."""
    n_q, n_k, d_k, d_v = (int(x) for x in rng.choice(np.arange(2, 9), size=4, replace=False))
    Q, K, V = np.ones((n_q, d_k)), np.ones((n_k, d_k)), np.ones((n_k, d_v))
    S = Q @ K.T / np.sqrt(d_k)
    A = np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)
    Y = A @ V

    def shape(array):
        return "({}, {})".format(*array.shape)

    return {
        "n_q": n_q,
        "n_k": n_k,
        "d_k": d_k,
        "d_v": d_v,
        "Q": shape(Q),
        "K": shape(K),
        "V": shape(V),
        "A": shape(A),
        "Y": shape(Y),
        "square": shape(np.ones((n_k, n_k))),  # a distractor: the weights as if n_q = n_k
        "kv": shape(np.ones((d_k, d_v))),  # a distractor
    }


def masks(rng):
    """sdp-mask-fill: two hidden cases, a causal mask over square scores and a rectangular mask
    with at least one allowed and one forbidden key in every row (so a forbidden score of 0
    or of +inf gives other weights than -inf)."""
    n = int(rng.integers(3, 6))
    causal = np.tril(np.ones((n, n), dtype=bool))
    n_q, n_k = int(rng.integers(2, 4)), int(rng.integers(3, 6))
    while True:
        mask = rng.random((n_q, n_k)) < 0.6
        if mask.any(axis=-1).all() and (~mask).any(axis=-1).all():
            break
    return {
        "S1": rng.integers(-20, 31, size=(n, n)) / 10,
        "mask1": causal,
        "S2": rng.integers(-20, 31, size=(n_q, n_k)) / 10,
        "mask2": mask,
    }
