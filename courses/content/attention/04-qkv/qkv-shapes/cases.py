def make_cases(rng):
    cases = []
    # (n, d_model, d_k, d_v): hepsi ders örneğinden farklı
    shapes = [(4, 5, 3, 2), (2, 3, 4, 5), (5, 6, 2, 6), (6, 4, 4, 3)]
    for i, (n, d_model, d_k, d_v) in enumerate(shapes, start=1):
        cases.append(
            {
                "name": f"gizli-{i}",
                "hidden": True,
                "inputs": {
                    "X": rng.normal(size=(n, d_model)),
                    "W_q": rng.normal(size=(d_model, d_k)),
                    "W_k": rng.normal(size=(d_model, d_k)),
                    "W_v": rng.normal(size=(d_model, d_v)),
                },
            }
        )
    return cases
