import numpy as np


def _weights(rng, n):
    z = rng.normal(size=n) * 2.0
    e = np.exp(z - z.max())
    return e / e.sum()


def make_cases(rng):
    cases = []
    for i, (n, d_model, d_v) in enumerate([(4, 5, 3), (6, 3, 5), (2, 4, 2), (5, 6, 6)], start=1):
        cases.append(
            {
                "name": f"gizli-{i}",
                "hidden": True,
                "inputs": {
                    "a": _weights(rng, n),
                    "X": rng.normal(size=(n, d_model)),
                    "W_v": rng.normal(size=(d_model, d_v)),
                },
            }
        )
    # tek bir tokena tüm ağırlık: çıktı o tokenın Value'su olmalı
    X = rng.normal(size=(3, 4))
    cases.append(
        {
            "name": "gizli-tek",
            "hidden": True,
            "inputs": {"a": np.array([0.0, 1.0, 0.0]), "X": X, "W_v": rng.normal(size=(4, 3))},
        }
    )
    return cases
