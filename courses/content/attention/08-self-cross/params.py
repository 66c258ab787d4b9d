"""Per-student numbers for the self- and cross-attention lesson's questions (see
docs/authoring.md, "Variants").

Each function gets a seeded ``rng`` and returns the parameters one variant of its question is
filled in with; every answer is computed here with NumPy from those parameters.
"""

import numpy as np


def cross_rows(rng):
    """cross-output-rows: a question of n_q text tokens looks at an image cut into a square
    grid of n_k patches; the output has one row per text token."""
    n_q = int(rng.integers(4, 21))
    side = int(rng.choice([5, 6, 7, 8, 10, 12, 14]))
    n_k, d_v = side * side, 8
    A = np.full((n_q, n_k), 1 / n_k)  # any weights: only the shapes matter here
    Y = A @ np.ones((n_k, d_v))
    return {
        "n_q": n_q,
        "n_k": n_k,
        "side": side,
        "rows": int(Y.shape[0]),
        "pairs": int(A.size),
    }
