"""Per-student numbers for the Query lesson's questions (see docs/authoring.md, "Variants").

Each function gets a seeded ``rng`` and returns the parameters one variant of its question is
filled in with; every answer is computed here with NumPy from those parameters.
"""

import numpy as np

ORDINALS = ["birinci", "ikinci", "üçüncü", "dördüncü", "beşinci"]


def param_count(rng):
    """query-param-count: how many numbers W^Q holds, and the two classic miscounts."""
    # Whole-number answers repeat more often than decimals: the question keeps few variants.
    d_k = int(rng.choice([16, 24, 32, 40, 48, 56, 64, 80, 96, 128]))
    d_model = int(16 * rng.integers(8, 65))  # 128 … 1024
    while d_model < 2 * d_k:
        d_model = int(16 * rng.integers(8, 65))
    W_q = np.zeros((d_model, d_k))
    return {
        "d_model": d_model,
        "d_k": d_k,
        "count": int(W_q.size),
        "added": d_model + d_k,  # params-add-dims
        "square": int(np.zeros((d_model, d_model)).size),  # params-square-dmodel
    }


def _decimals(rng, shape):
    """Small numbers with one decimal, never all zero in a row."""
    return rng.integers(-20, 21, size=shape) / 10


def one_query(rng):
    """query-fill: which token i asks, and two hidden cases (one with a square W^Q, where the
    wrong order W_q @ X[i] runs too) on which every catalogued wrong filling differs."""
    n = int(rng.integers(3, 6))
    i = int(rng.integers(0, n))
    while True:
        d_model = int(rng.integers(3, 5))
        d_k = int(rng.integers(2, d_model))  # W^Q is not square in the first case
        X1, W1 = _decimals(rng, (n, d_model)), _decimals(rng, (d_model, d_k))
        X2, W2 = _decimals(rng, (n, 3)), _decimals(rng, (3, 3))
        right1, right2 = X1[i] @ W1, X2[i] @ W2
        if np.abs(right1).max() < 0.5 or np.abs(right2).max() < 0.5:
            continue
        # W_q @ X[i] (the square case) and W_q[i] must give other numbers than X[i] @ W_q.
        if np.allclose(W2 @ X2[i], right2) or (i < 3 and np.allclose(W2[i], right2)):
            continue
        if i < d_model and np.allclose(W1[i], right1):
            continue
        break
    return {
        "i": i,
        "sira": ORDINALS[i],
        "X1": X1,
        "W_q1": W1,
        "X2": X2,
        "W_q2": W2,
    }
