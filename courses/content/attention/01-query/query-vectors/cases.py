def make_cases(rng):
    cases = []
    # (n, d_model, d_k): token sayısı ve boyutlar örnekten farklı
    for i, (n, d_model, d_k) in enumerate([(5, 6, 3), (2, 3, 4), (7, 8, 8), (4, 5, 1)], start=1):
        cases.append(
            {
                "name": f"gizli-{i}",
                "hidden": True,
                "inputs": {
                    "X": rng.normal(size=(n, d_model)),
                    "W_q": rng.normal(size=(d_model, d_k)),
                },
            }
        )
    # kare matrislerle: sıra hatası boyut hatası vermez, değerleri bozar
    cases.append(
        {
            "name": "gizli-kare",
            "hidden": True,
            "inputs": {"X": rng.normal(size=(4, 4)), "W_q": rng.normal(size=(4, 4))},
        }
    )
    return cases
