"""Property (metamorphic) cases: the derived inputs keep each relation for a correct attention
and break it for the known mistakes, the checks run on the student's own outputs, and hostile
submissions get nothing of the hidden inputs out through probe or property cases."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext
from test_probes import course_exercise

from grader.core import Case, Verdict, parse_spec
from grader.core import messages as M
from grader.core.grade import CaseResult
from grader.core.properties import check_property, derive_property_cases, relation_error
from grader.core.spec import SpecError


def attention(Q, K, V, mask=None, *, scale=True, axis=-1, masked_score=-np.inf):
    S = Q @ np.swapaxes(K, -1, -2) / (np.sqrt(Q.shape[-1]) if scale else 1.0)
    if mask is not None:
        S = np.where(mask, S, masked_score)
    e = np.exp(S - S.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)) @ V


rng = np.random.default_rng(5)
CAUSAL = np.tri(4, dtype=bool)
BASE = Case(
    name="base",
    inputs={
        "Q": rng.normal(size=(4, 3)),
        "K": rng.normal(size=(4, 3)),
        "V": rng.normal(size=(4, 2)),
        "mask": CAUSAL,
    },
)
SPEC = parse_spec(
    {
        "kind": "function",
        "function": "attention",
        "properties": [
            {"kind": "permute_keys", "base": "base"},
            {"kind": "shift_keys", "base": "base"},
            {"kind": "future_values", "base": "base"},
            {"kind": "scale_values", "base": "base"},
        ],
    }
)
DERIVED = {c.derived: c for c in derive_property_cases(SPEC, [BASE])}
PROPS = {p.kind: p for p in SPEC.properties}


def holds(kind: str, function) -> bool:
    before, after = function(**BASE.inputs), function(**DERIVED[kind].inputs)
    return relation_error(PROPS[kind], BASE, before, after, SPEC)[0]


def test_each_derived_case_is_named_after_its_base_and_kind():
    assert sorted(c.name for c in DERIVED.values()) == [
        "base~future_values",
        "base~permute_keys",
        "base~scale_values",
        "base~shift_keys",
    ]
    assert all(c.base == "base" and c.hidden == BASE.hidden for c in DERIVED.values())


@pytest.mark.parametrize("kind", ["permute_keys", "shift_keys", "future_values", "scale_values"])
def test_a_correct_attention_keeps_every_relation(kind):
    assert holds(kind, attention)


def test_permuting_keys_and_values_together_really_permutes_them_and_the_mask():
    changed = DERIVED["permute_keys"].inputs
    perm = [int(np.flatnonzero((BASE.inputs["K"] == row).all(axis=1))[0]) for row in changed["K"]]
    assert sorted(perm) == [0, 1, 2, 3] and perm != [0, 1, 2, 3]
    assert np.array_equal(changed["V"], BASE.inputs["V"][perm])
    assert np.array_equal(changed["mask"], BASE.inputs["mask"][:, perm])


def test_the_known_mistakes_break_the_relations_that_expose_them():
    assert not holds("shift_keys", lambda **kw: attention(**kw, axis=0))  # softmax over the queries
    assert not holds("future_values", lambda **kw: attention(**kw, masked_score=0.0))  # a leaky mask
    assert not holds("future_values", lambda Q, K, V, mask: attention(Q, K, V))  # the mask ignored
    assert not holds(
        "scale_values", lambda Q, K, V, mask: attention(Q, K, np.eye(4), mask)
    )  # weights returned
    assert not holds("permute_keys", lambda Q, K, V, mask: attention(Q, K, V[::-1], mask))  # values unpaired
    # Forgetting the scale keeps them all: the probes' temperature diagnosis is what finds it.
    for kind in PROPS:
        assert holds(kind, lambda **kw: attention(**kw, scale=False))


def test_a_failed_relation_gives_the_concept_hint_and_on_visible_cases_where():
    visible = Case(name="base", inputs=BASE.inputs, hidden=False)
    before = CaseResult("base", True, False, outputs={"return": attention(**BASE.inputs)})
    after = CaseResult(
        "base~shift_keys", True, False, outputs={"return": attention(**DERIVED["shift_keys"].inputs, axis=0)}
    )
    found = check_property(PROPS["shift_keys"], visible, before, after, SPEC)
    assert not found.passed and found.message.msgid == M.PROPERTY_SHIFT_KEYS
    assert found.detail.msgid == M.PROPERTY_DETAIL
    hidden = check_property(PROPS["shift_keys"], BASE, before, after, SPEC)
    assert not hidden.passed and hidden.message.msgid == M.PROPERTY_SHIFT_KEYS and hidden.detail is None
    with translation.override("tr"):
        assert hidden.message.render(gettext).startswith(
            "Her Key'e aynı c vektörünü eklemek çıktınızı değiştirdi."
        )


def test_a_base_case_that_gave_nan_has_no_relation_to_judge():
    before = CaseResult("base", False, True, outputs={"return": np.full((4, 2), np.nan)})
    after = CaseResult("base~shift_keys", True, True, outputs={"return": np.zeros((4, 2))})
    assert check_property(PROPS["shift_keys"], BASE, before, after, SPEC) is None


def test_property_spec_errors_name_the_key():
    base = {"kind": "function", "function": "attention"}
    for entry, key in [
        ({"kind": "rotate_keys", "base": "x"}, "properties[0].kind"),
        ({"kind": "scale_values", "base": "x", "amount": 1}, "properties[0].amount"),
        ({"kind": "shift_keys", "base": "x", "inputs": ["K", "Q"]}, "properties[0].inputs"),
        ({"kind": "shift_keys", "base": "x", "mask": "m"}, "properties[0].mask"),
    ]:
        with pytest.raises(SpecError) as error:
            parse_spec({**base, "properties": [entry]})
        assert error.value.key == key


def test_a_named_base_case_that_does_not_fit_is_an_authoring_error():
    no_mask = Case(name="plain", inputs={k: v for k, v in BASE.inputs.items() if k != "mask"})
    spec = parse_spec(
        {"kind": "function", "function": "f", "properties": [{"kind": "future_values", "base": "plain"}]}
    )
    with pytest.raises(SpecError, match="has no boolean mask"):
        derive_property_cases(spec, [no_mask])
    star = parse_spec(
        {"kind": "function", "function": "f", "properties": [{"kind": "future_values", "base": "*"}]}
    )
    assert derive_property_cases(star, [no_mask]) == []  # "*" takes the cases it fits


# --- hostile submissions: nothing of a hidden input gets out -------------------------------


@pytest.fixture(scope="module")
def attention_function():
    return course_exercise("06-scaled-dot-product/attention-function")


def hidden_numbers(ex) -> set[str]:
    """Every hidden input value (of the author's and the derived cases) as the feedback
    would print it, long enough not to turn up by chance."""
    found = set()
    for case in ex.cases:
        if case.hidden:
            for arr in case.inputs.values():
                if arr.dtype.kind == "f":
                    for x in arr.ravel():
                        for text in (f"{x:.6g}", f"{x:.5g}", f"{x:.4f}"):
                            if len(text.lstrip("-")) >= 6:
                                found.add(text)
    return found


def everything_shown(result) -> str:
    """All a student can see of a result: the CLI's JSON, what is stored, the rendered page."""
    from grader.grading import result_fields
    from grader.models import Submission

    fields = result_fields(result)
    submission = Submission(pk=1, status="done", mode="submit", stdout=result.stdout, **fields)
    with translation.override("tr"):
        page = render_to_string("grader/result.html", {"submission": submission, "hints": {}})
        shown = json.dumps(result.to_dict(gettext), ensure_ascii=False)
    return shown + json.dumps(fields, ensure_ascii=False) + page


def assert_no_hidden_number(ex, result):
    text = everything_shown(result)
    leaked = sorted(n for n in hidden_numbers(ex) if n in text)
    assert not leaked, leaked[:5]


SMUGGLER = """
import numpy as np

def attention(Q, K, V, mask=None):
    print("Q:", Q.tolist(), "K:", K.tolist())
    secret = repr(np.concatenate([Q.ravel(), K.ravel(), V.ravel()]).tolist())
    is_probe = V.shape[-1] == V.shape[-2] and np.allclose(V, np.eye(V.shape[-1]))
    if Q.shape != (2, 4) and not is_probe:        # any hidden case or a case derived from one
        if np.allclose(V.sum(), -2 * 0) or K.shape[-2] % 2:
            raise ValueError("smuggled " + secret)
        class Leak(Exception):
            pass
        Leak.__name__ = "Leak_" + secret[:40]
        raise Leak(secret)
    d_k = Q.shape[-1]
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""


@pytest.mark.sandbox
def test_exceptions_and_prints_on_derived_hidden_cases_carry_no_hidden_input(attention_function):
    result = attention_function.grade(SMUGGLER)
    assert result.verdict == Verdict.ERROR
    assert "smuggled" not in everything_shown(result)
    assert_no_hidden_number(attention_function, result)


TEMPERED = """
import numpy as np

def attention(Q, K, V, mask=None):
    # The weights tempered by a hidden number: a temperature estimate would print it.
    factor = 1.0 + abs(float(Q.ravel()[0])) * 7.0
    s = factor * (Q @ np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    # And the permuted, shifted and scaled cases answer with the inputs themselves.
    if V.shape[-1] != V.shape[-2] and K.shape[-2] > 2 and abs(float(K.ravel()[-1])) > 0:
        return np.broadcast_to(Q.ravel()[: V.shape[-1]], w.shape[:-1] + (V.shape[-1],)).copy() if Q.size >= V.shape[-1] else w @ V
    return w @ V
"""


@pytest.mark.sandbox
def test_weights_and_outputs_chosen_from_hidden_inputs_give_only_fixed_texts(attention_function):
    result = attention_function.grade(TEMPERED)
    assert result.verdict == Verdict.FAILED
    hidden = [t for t in result.tests if t.hidden]
    for test in hidden:
        for message in test.probe.diagnoses if test.probe else []:
            assert message.params in ({},) or set(message.params) == {"factor", "d_k"}, message
        for check in test.properties:
            assert check.detail is None
    assert_no_hidden_number(attention_function, result)


MEMORY = """
import numpy as np
SEEN = []

def attention(Q, K, V, mask=None):
    SEEN.append(Q.ravel().tolist())
    # Every call answers with all inputs seen so far, as weights of the right shape.
    flat = np.array([x for q in SEEN for x in q] + [0.0] * 64)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    w = np.resize(flat, Q.shape[:-2] + (n_q, n_k))
    return w @ V
"""


@pytest.mark.sandbox
def test_the_visible_heatmap_runs_before_any_hidden_input_exists(attention_function):
    result = attention_function.grade(MEMORY)
    (ornek,) = [t for t in result.tests if t.name == "ornek"]
    assert ornek.probe is not None and ornek.probe.student is not None  # a heatmap of the student's numbers
    assert_no_hidden_number(attention_function, result)


def test_the_catalogue_says_what_each_variant_breaks():
    from types import SimpleNamespace

    from courses import catalogue
    from grader.core import GradeResult
    from grader.core.probes import ProbeReport
    from grader.core.properties import PropertyResult

    case = CaseResult("gizli", False, True)
    case.properties = [
        PropertyResult("shift_keys", "gizli", True, passed=False),
        PropertyResult("permute_keys", "gizli", True, passed=True),
    ]
    case.probe = ProbeReport("gizli", True, False, diagnoses=[M.Message(M.PROBE_COLUMNS_SUM)])
    exercise = SimpleNamespace(slug="attention-function")
    catalogue.record(exercise, "softmax-wrong-axis", GradeResult(verdict=Verdict.FAILED, tests=[case]))
    source = SimpleNamespace(all_exercises=lambda: [exercise])
    assert catalogue.report(source) == [
        {
            "exercise": "attention-function",
            "tag": "softmax-wrong-axis",
            "properties_broken": ["shift_keys"],
            "diagnoses": ["wrong_axis"],
        }
    ]
    assert catalogue.report_lines(source) == [
        "attention-function: softmax-wrong-axis breaks shift_keys; probe: wrong_axis"
    ]


HANGS_ON_HIDDEN_PROBES = """
import numpy as np

def attention(Q, K, V, mask=None):
    if Q.shape != (2, 4) and V.shape[-1] == V.shape[-2] and np.allclose(V, np.eye(V.shape[-1])):
        while True:
            pass
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""


@pytest.mark.sandbox
def test_a_hang_in_a_hidden_probe_never_costs_a_real_case_its_result(attention_function):
    import dataclasses

    from grader.core import Limits, grade

    spec = dataclasses.replace(attention_function.spec, limits=Limits(cpu_seconds=1, wall_seconds=2))
    result = grade(HANGS_ON_HIDDEN_PROBES, spec, attention_function.cases, attention_function.ref)
    assert result.verdict == Verdict.PASSED and result.score == 1.0
    assert [t.name for t in result.tests if t.probe is not None] == [
        "ornek"
    ]  # the hidden probes never finished


@pytest.mark.sandbox
def test_a_hang_in_a_visible_probe_never_costs_the_hidden_cases_their_results(attention_function):
    """The visible probe runs before any hidden input exists, in the same time budget: a program
    that hangs only on it still gets every author's case graded (in a run without derived cases)."""
    import dataclasses

    from grader.core import Limits, grade

    hangs_on_every_probe = HANGS_ON_HIDDEN_PROBES.replace("Q.shape != (2, 4) and ", "")
    spec = dataclasses.replace(attention_function.spec, limits=Limits(cpu_seconds=1, wall_seconds=2))
    result = grade(hangs_on_every_probe, spec, attention_function.cases, attention_function.ref)
    assert result.verdict == Verdict.PASSED and result.score == 1.0
    assert all(t.probe is None for t in result.tests)  # nothing is taught from the run that hung
