"""Per-student numbers for the Key lesson's questions (see docs/authoring.md, "Variants").

Each function gets a seeded ``rng`` and returns the parameters one variant of its question is
filled in with; every answer is computed here with NumPy from those parameters.
"""

import numpy as np


def dot_product(rng):
    """key-dot-product: q has small whole numbers, k two decimals, so the score is a decimal
    that seldom repeats between variants; the two "sum" slips stay well away from it."""
    while True:
        q = rng.integers(0, 5, size=3)
        k = rng.integers(50, 401, size=3) / 100  # 0,50 … 4,00
        if np.count_nonzero(q) < 2:
            continue
        score = float(np.dot(q, k))
        added = float(q.sum() + k.sum())  # every component added up
        k_only = float(k.sum())  # k's components added up
        if min(abs(score - added), abs(score - k_only), abs(added - k_only)) >= 0.5:
            break
    products = q * k
    return {
        **{f"q{n + 1}": int(q[n]) for n in range(3)},
        **{f"k{n + 1}": round(float(k[n]), 2) for n in range(3)},
        **{f"p{n + 1}": round(float(products[n]), 2) for n in range(3)},
        "score": round(score, 6),
        "added": round(added, 6),
        "k_only": round(k_only, 6),
    }


def score_pair(rng):
    """key-catalogue-word: which pair (i, j) is asked, and two hidden cases on which the
    reverse score, Query·Query and the elementwise product all differ from Q[i] @ K[j]."""
    n = int(rng.integers(3, 6))
    i, j = (int(x) for x in rng.choice(n, size=2, replace=False))

    def case(d):
        while True:
            Q = rng.integers(-20, 21, size=(n, d)) / 10
            K = rng.integers(-20, 21, size=(n, d)) / 10
            right = Q[i] @ K[j]
            others = (Q[j] @ K[i], Q[i] @ Q[j])
            if abs(right) >= 0.5 and all(abs(right - other) >= 0.5 for other in others):
                return Q, K

    Q1, K1 = case(2)
    Q2, K2 = case(int(rng.integers(3, 5)))
    return {
        "i": i,
        "j": j,
        "Q1": Q1,
        "K1": K1,
        "Q2": Q2,
        "K2": K2,
    }
