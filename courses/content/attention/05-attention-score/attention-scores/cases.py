def make_cases(rng):
    cases = []
    # (n_q, n_k, d_k): token sayıları ve d_k birbirinden farklı
    for i, (n_q, n_k, d_k) in enumerate([(3, 5, 2), (4, 2, 9), (1, 6, 3), (5, 5, 16)], start=1):
        cases.append(
            {
                "name": f"gizli-{i}",
                "hidden": True,
                "inputs": {"Q": rng.normal(size=(n_q, d_k)), "K": rng.normal(size=(n_k, d_k))},
            }
        )
    # büyük büyüklükler: skorlar ~ yüzlerce; max çıkarmayan softmax taşar
    cases.append(
        {
            "name": "gizli-buyuk",
            "hidden": True,
            "inputs": {"Q": 3.0 * rng.normal(size=(3, 4)) + 20.0, "K": 3.0 * rng.normal(size=(4, 4)) + 20.0},
        }
    )
    return cases
