import numpy as np


def _causal_row(rng, n, i):
    # i. tokenın ağırlıkları: i'den sonrası 0, geri kalanı softmax
    z = rng.normal(size=i + 1) * 1.5
    w = np.exp(z - z.max())
    w = w / w.sum()
    return np.concatenate([w, np.zeros(n - i - 1)])


def make_cases(rng):
    cases = []
    for k, (n, i, d) in enumerate([(7, 4, 2), (6, 4, 3), (5, 2, 4), (3, 2, 2)], start=1):
        cases.append(
            {
                "name": f"gizli-{k}",
                "hidden": True,
                "inputs": {
                    "x": rng.normal(size=d),
                    "a": _causal_row(rng, n, i),
                    "V": rng.normal(size=(n, d)),
                },
            }
        )
    return cases
