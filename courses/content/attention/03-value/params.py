"""Per-student numbers for the Value lesson's questions (see docs/authoring.md, "Variants").

Each function gets a seeded ``rng`` and returns the parameters one variant of its question is
filled in with; every answer is computed here with NumPy from those parameters.
"""

import numpy as np


def blend(rng):
    """value-blend-number: three two-component Values with whole numbers, attention weights in
    steps of 0,05 that sum to 1; the answer is the output's second component, and the three
    catalogued slips (plain mean, first component, plain sum) stay apart from it."""
    while True:
        V = rng.integers(0, 13, size=(3, 2))
        cuts = np.sort(rng.choice(np.arange(2, 19), size=2, replace=False))
        twentieths = np.array([cuts[0], cuts[1] - cuts[0], 20 - cuts[1]])
        if twentieths.min() < 2:  # every weight at least 0,1
            continue
        a = twentieths / 20
        y = a @ V
        answer = float(y[1])
        wrong = [float(V[:, 1].mean()), float(y[0]), float(V[:, 1].sum())]
        values = [answer, *wrong]
        if all(abs(x - z) >= 0.1 for n, x in enumerate(values) for z in values[n + 1 :]):
            break
    return {
        **{f"v{j + 1}{c + 1}": int(V[j, c]) for j in range(3) for c in range(2)},
        **{f"a{j + 1}": round(float(a[j]), 2) for j in range(3)},
        "y1": round(float(y[0]), 6),
        "y2": round(answer, 6),
        "mean": round(wrong[0], 6),
        "total": int(V[:, 1].sum()),
    }
