def make_cases(rng):
    cases = []
    for i, n in enumerate([4, 6, 2], start=1):
        cases.append({"name": f"gizli-{i}", "hidden": True, "inputs": {"S": rng.normal(size=(n, n)) * 2.0}})
    # batch'li: (3, 5, 5) ve (2, 2, 4, 4)
    cases.append({"name": "gizli-batch", "hidden": True, "inputs": {"S": rng.normal(size=(3, 5, 5))}})
    cases.append({"name": "gizli-batch-head", "hidden": True, "inputs": {"S": rng.normal(size=(2, 2, 4, 4))}})
    return cases
