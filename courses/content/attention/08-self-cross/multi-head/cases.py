def make_cases(rng):
    cases = []
    # (n, d_model, h, d_k, d_v)
    for i, (n, d_model, h, d_k, d_v) in enumerate(
        [(5, 6, 3, 2, 2), (4, 8, 2, 4, 3), (6, 4, 4, 3, 1)], start=1
    ):
        cases.append(
            {
                "name": f"gizli-{i}",
                "hidden": True,
                "inputs": {
                    "X": rng.normal(size=(n, d_model)),
                    "W_q": rng.normal(size=(h, d_model, d_k)),
                    "W_k": rng.normal(size=(h, d_model, d_k)),
                    "W_v": rng.normal(size=(h, d_model, d_v)),
                    "W_o": rng.normal(size=(h * d_v, d_model)),
                },
            }
        )
    return cases
