def make_cases(rng):
    cases = []
    for i, (n, d_model, d_k) in enumerate([(5, 6, 3), (2, 3, 4), (6, 4, 4), (4, 7, 2)], start=1):
        cases.append(
            {
                "name": f"gizli-{i}",
                "hidden": True,
                "inputs": {
                    "q": rng.normal(size=(d_k,)),
                    "X": rng.normal(size=(n, d_model)),
                    "W_k": rng.normal(size=(d_model, d_k)),
                },
            }
        )
    return cases
