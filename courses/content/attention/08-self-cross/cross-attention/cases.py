def make_cases(rng):
    cases = []
    # (n_q, n_k, d_text, d_image, d_k, d_v)
    # d_text = d_image: yanlış kaynak bir istisna değil yanlış değerler üretir, böylece
    # kv-from-query-source / query-from-image ipuçları gösterilebilir.
    dims = [(3, 7, 4, 4, 2, 5), (5, 2, 3, 3, 4, 3), (1, 9, 6, 6, 8, 2), (4, 6, 5, 5, 3, 6)]
    for i, (n_q, n_k, d_text, d_image, d_k, d_v) in enumerate(dims, start=1):
        cases.append(
            {
                "name": f"gizli-{i}",
                "hidden": True,
                "inputs": {
                    "X_text": rng.normal(size=(n_q, d_text)),
                    "X_image": rng.normal(size=(n_k, d_image)),
                    "W_q": rng.normal(size=(d_text, d_k)),
                    "W_k": rng.normal(size=(d_image, d_k)),
                    "W_v": rng.normal(size=(d_image, d_v)),
                },
            }
        )
    return cases
