"""Per-student numbers for the attention-score lesson's questions (see docs/authoring.md,
"Variants").

Each function gets a seeded ``rng`` and returns the parameters one variant of its question is
filled in with; every answer is computed here with NumPy from those parameters.
"""

import numpy as np


def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# Weights the lesson prints in its worked examples: an answer must not be one of them.
LESSON_WEIGHTS = (0.007, 0.018, 0.067, 0.090, 0.111, 0.245, 0.665, 0.821, 0.976)


def two_keys(rng):
    """score-softmax-two: two scaled scores with two decimals, 0,5 to 3 apart (either may be the
    larger); the answer is the first Key's weight. The slips: 1 or 0 (argmax), the first score
    itself (always above 1, never a weight), and e^s1 / (e^s1 + 1) (the second score taken as 0)."""
    while True:
        s1 = int(rng.integers(110, 301)) / 100  # 1,10 … 3,00
        s2 = int(rng.integers(-150, 401)) / 100  # −1,50 … 4,00
        gap = s1 - s2
        if s2 == 0 or not 0.5 <= abs(gap) <= 3.0:
            continue
        # The lesson works whole gaps out (σ(1) ≈ 0,731, σ(2) ≈ 0,881): no answer read off it.
        if abs(abs(gap) - round(abs(gap))) < 0.05:
            continue
        weights = softmax([s1, s2])
        if any(abs(weights[0] - shown) < 0.005 for shown in LESSON_WEIGHTS):
            continue
        second_as_zero = float(softmax([s1, 0.0])[0])
        if abs(second_as_zero - weights[0]) >= 0.02:
            break
    e1, e2 = float(np.exp(s1)), float(np.exp(s2))
    return {
        "s1": s1,
        "s2": s2,
        "gap": round(gap, 2),
        "back": round(s2 - s1, 2),
        "e1": round(e1, 3),
        "e2": round(e2, 3),
        "denominator": round(e1 + e2, 3),
        "weight": round(float(weights[0]), 4),
        "other": round(float(weights[1]), 4),
        "argmax": 1 if s1 > s2 else 0,
        "second_as_zero": round(second_as_zero, 4),
    }


def scaling_cases(rng):
    """score-scale-fill: two hidden cases with different d_k, where d_v and n_q differ from
    d_k, so dividing by d_k, by √d_v or by √n_q gives other numbers than √d_k."""
    d_k1, d_k2 = (int(d) for d in rng.choice(np.arange(2, 10), size=2, replace=False))
    cases = {}
    for name, d_k in (("1", d_k1), ("2", d_k2)):
        n_q = int(rng.choice([n for n in range(1, 5) if n != d_k]))
        n_k = int(rng.integers(2, 5))
        d_v = int(rng.choice([d for d in range(2, 6) if d != d_k]))
        while True:
            Q = rng.integers(-20, 21, size=(n_q, d_k)) / 10
            K = rng.integers(-20, 21, size=(n_k, d_k)) / 10
            if np.abs(Q @ K.T).max() >= 0.5:
                break
        cases["Q" + name] = Q
        cases["K" + name] = K
        cases["V" + name] = rng.integers(-20, 21, size=(n_k, d_v)) / 10
        cases["d_k" + name] = d_k
    return cases


def score_matrix(rng):
    """score-matrix: the 3×3 raw score matrix S = Q Kᵀ of three tokens with d_k = 2 (whole
    numbers, typed by hand). The slips: K Qᵀ (Sᵀ: rows taken as Keys) and Q Qᵀ (a Query
    compared with Queries); each differs from S in at least four cells, and from each other."""
    while True:
        Q = rng.integers(-2, 4, size=(3, 2))
        K = rng.integers(-2, 4, size=(3, 2))
        if (Q == 0).all(axis=1).any() or (K == 0).all(axis=1).any():
            continue  # a token with a zero vector scores 0 with everything
        scores, self_product = Q @ K.T, Q @ Q.T
        if (
            (scores != scores.T).sum() >= 4
            and (scores != self_product).sum() >= 4
            and (self_product != scores.T).any()
            and np.abs(scores).max() >= 2
        ):
            break
    q, k = Q[0], K[1]

    def factor(value):
        return f"({value})" if value < 0 else str(value)

    return {
        "Q": Q,
        "K": K,
        "scores": scores,
        "transposed": scores.T,
        "self_product": self_product,
        # The worked cell of the explanation: "Ayşe"'s Query with "kitabı"'s Key.
        "worked": rf"{factor(q[0])} \cdot {factor(k[0])} + {factor(q[1])} \cdot {factor(k[1])} = {scores[0, 1]}",
    }
