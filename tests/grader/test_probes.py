"""Weight probes: the diagnoses on constructed weight matrices, and the shipped exercises'
known-wrong variants graded in the sandbox with the exact Turkish text a student reads."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
from django.utils import translation
from django.utils.translation import gettext
from grader_testkit import PROJECT_ROOT, Exercise

from grader.core import Verdict, build_cases, parse_spec, run_reference
from grader.core import messages as M
from grader.core.probes import diagnose, temperature
from grader.core.spec import SpecError

COURSE = PROJECT_ROOT / "courses" / "content" / "attention"


def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


SCORES = np.array([[0.5, 2.0, -1.0, 0.3], [1.0, 0.0, 3.0, -0.5], [0.2, 0.4, 0.6, 1.5]])
REFERENCE = softmax(SCORES)
CAUSAL = np.tri(3, 4, dtype=bool)


def ids(found):
    return [m.msgid for m in found]


# --- diagnoses on constructed matrices ---------------------------------------------------


def test_matching_weights_have_no_diagnosis():
    assert diagnose(REFERENCE.copy(), REFERENCE, None) == []


def test_rows_that_do_not_sum_to_one_name_the_worst_row_and_its_sum():
    weights = REFERENCE.copy()
    weights[1] *= 0.5
    (found,) = diagnose(weights, REFERENCE, None)
    assert found.msgid == M.PROBE_ROW_SUMS
    assert found.params == {"row": "[1]", "sum": "0.5"}


def test_negative_weights_are_named_with_their_place():
    weights = REFERENCE.copy()
    weights[2, 0], weights[2, 3] = -0.25, weights[2, 3] + weights[2, 0] + 0.25
    found = diagnose(weights, REFERENCE, None)
    assert ids(found) == [M.PROBE_NEGATIVE]
    assert found[0].params == {"index": "[2, 0]", "value": "-0.25"}


def test_weight_on_a_masked_position_names_query_and_key():
    reference = softmax(np.where(CAUSAL, SCORES, -np.inf))
    leaky = softmax(np.where(CAUSAL, SCORES, 0.0))  # the masked scores set to 0, not -inf
    found = diagnose(leaky, reference, CAUSAL)
    assert ids(found) == [M.PROBE_MASKED]
    assert (found[0].params["row"], found[0].params["column"]) == (0, 1)


def test_softmax_over_the_query_axis_is_told_as_columns_summing_to_one():
    found = diagnose(softmax(SCORES, axis=0), REFERENCE, None)
    assert ids(found) == [M.PROBE_COLUMNS_SUM]


def test_softmax_over_a_batch_axis_names_that_axis():
    batch = np.stack([SCORES, SCORES[::-1]])
    found = diagnose(softmax(batch, axis=0), softmax(batch), None)
    assert ids(found) == [M.PROBE_OTHER_AXIS_SUMS]
    assert found[0].params == {"axis": 0}


def test_mask_applied_after_the_softmax_is_recognised_by_rows_below_one():
    reference = softmax(np.where(CAUSAL, SCORES, -np.inf))
    found = diagnose(REFERENCE * CAUSAL, reference, CAUSAL)
    assert ids(found) == [M.PROBE_ROWS_BELOW_ONE_MASK]


def test_forgotten_scaling_is_estimated_as_sqrt_dk_times_too_peaked():
    found = diagnose(softmax(2.0 * SCORES), REFERENCE, None, d_k=4)
    assert ids(found) == [M.PROBE_TOO_PEAKED_SQRT_DK]
    assert found[0].params == {"factor": "2", "d_k": 4}
    assert temperature(softmax(2.0 * SCORES), REFERENCE, None) == pytest.approx(2.0)


def test_dividing_by_dk_instead_of_its_root_is_too_flat():
    found = diagnose(softmax(SCORES / 3.0), REFERENCE, None, d_k=9)
    assert ids(found) == [M.PROBE_TOO_FLAT_SQRT_DK]
    assert found[0].params["factor"] == "3"


def test_another_temperature_is_told_with_its_factor_on_visible_cases_only():
    assert diagnose(softmax(1.5 * SCORES), REFERENCE, None, d_k=4)[0].params == {"factor": "1.5"}
    (hidden,) = diagnose(softmax(1.5 * SCORES), REFERENCE, None, d_k=4, hidden=True)
    assert hidden.msgid == M.PROBE_TOO_PEAKED_HIDDEN and hidden.params == {}


def test_weights_that_are_no_tempered_softmax_get_the_plain_difference():
    weights = REFERENCE[:, [1, 0, 2, 3]]  # rows sum to 1, yet not a temperature of the scores
    found = diagnose(weights, REFERENCE, None)
    assert ids(found) == [M.PROBE_DIFFERS]


def test_hidden_diagnoses_show_no_number_of_the_case():
    weights = REFERENCE.copy()
    weights[2, 0], weights[2, 3] = -0.25, weights[2, 3] + weights[2, 0] + 0.25
    weights[1] *= 0.7
    for found in (
        diagnose(weights, REFERENCE, None, hidden=True),
        diagnose(softmax(np.where(CAUSAL, SCORES, 0.0)), REFERENCE, CAUSAL, hidden=True),
        diagnose(REFERENCE[:, [1, 0, 2, 3]], REFERENCE, None, hidden=True),
        diagnose(REFERENCE[:2], REFERENCE, None, hidden=True),
    ):
        assert found
        for message in found:
            assert message.params == {}, message  # a fixed text


def test_probe_spec_is_checked():
    base = {"kind": "function", "function": "attention"}
    with pytest.raises(SpecError) as error:
        parse_spec({**base, "probes": [{"base": "ornek", "values": "V", "colour": 1}]})
    assert error.value.key == "probes[0].colour"
    with pytest.raises(SpecError) as error:
        parse_spec({**base, "probes": [{"base": "Örnek!", "values": "V"}]})
    assert error.value.key == "probes[0].base"


# --- the shipped exercises in the sandbox ------------------------------------------------


def course_exercise(relative: str) -> Exercise:
    directory = COURSE / relative
    spec = parse_spec(tomllib.loads((directory / "exercise.toml").read_text()))
    cases = build_cases(spec, directory)
    solution = (directory / "solution.py").read_text()
    return Exercise(directory, spec, cases, run_reference(solution, spec, cases), solution)


@pytest.fixture(scope="module")
def attention_function():
    return course_exercise("06-scaled-dot-product/attention-function")


@pytest.fixture(scope="module")
def causal_mask():
    return course_exercise("07-visual-attention/causal-mask")


def visible_probe_text(ex: Exercise, variant: str) -> list[str]:
    result = ex.grade((ex.dir / "variants" / variant).read_text())
    assert result.verdict == Verdict.FAILED
    (ornek,) = [t for t in result.tests if t.name == "ornek"]
    assert ornek.probe is not None and not ornek.probe.matches
    assert ornek.probe.student is not None and ornek.probe.reference is not None  # the heatmaps' data
    with translation.override("tr"):
        return [m.render(gettext) for m in ornek.probe.diagnoses]


@pytest.mark.sandbox
def test_no_scaling_gets_the_temperature_diagnosis(attention_function):
    assert visible_probe_text(attention_function, "no-scaling.py") == [
        "Ağırlıklarınız olması gerekenden yaklaşık 2× daha sivri: √d_k = 2 (d_k = 4). "
        "Ölçeklemeyi unuttunuz mu? Skorları softmax'tan önce √d_k'ya bölün."
    ]


@pytest.mark.sandbox
def test_softmax_on_the_wrong_axis_gets_the_axis_diagnosis(attention_function):
    assert visible_probe_text(attention_function, "softmax-wrong-axis.py") == [
        "Ağırlıklarınızın satırları değil sütunları 1'e toplanıyor: softmax Query ekseni boyunca "
        "alınmış. Her Query dikkatini Key'lere dağıtır; softmax'ı son eksen boyunca alın (axis=-1)."
    ]


@pytest.mark.sandbox
def test_a_leaky_mask_gets_the_masked_weight_diagnosis(causal_mask):
    assert visible_probe_text(causal_mask, "mask-zero-scores.py") == [
        "Query 0, maskeli bir konum olan Key 1'e 0.274069 ağırlık veriyor. Maskeli bir konum tam "
        "olarak sıfır ağırlık almalı: softmax'tan önce skorunu −∞ yapın (0 da herhangi bir skor "
        "gibi bir skordur)."
    ]


@pytest.mark.sandbox
def test_hidden_probes_of_a_leaky_mask_say_so_without_numbers(attention_function):
    result = attention_function.grade((attention_function.dir / "variants" / "mask-ignored.py").read_text())
    hidden = {t.name: t.probe for t in result.tests if t.hidden and t.probe is not None}
    assert hidden["causal-2d"].diagnoses[0].msgid == M.PROBE_MASKED_HIDDEN
    assert hidden["causal-2d"].to_dict().keys() == {"case", "hidden", "matches", "diagnoses"}


@pytest.mark.sandbox
def test_the_reference_solution_gets_no_diagnosis_and_probes_never_change_the_score(attention_function):
    result = attention_function.grade(attention_function.solution)
    assert result.verdict == Verdict.PASSED
    assert len(result.tests) == 10  # the author's cases only: probes and properties are not cases
    # The probes run on the cases named in exercise.toml's [[probes]] base (not every case).
    probed = [t for t in result.tests if t.probe is not None]
    assert [t.name for t in probed] == ["ornek", "buyuk-skor", "causal-2d", "maske-2d", "causal-batch"]
    assert all(t.probe.matches for t in probed)
    assert all(p.passed for t in result.tests for p in t.properties)


def test_a_probe_with_nan_keeps_no_matrix_so_the_stored_json_stays_valid():
    import json

    from grader.core import Case
    from grader.core.grade import CaseResult
    from grader.core.probes import probe_report
    from grader.core.spec import ProbeSpec

    base = Case("ornek", {"K": np.zeros((4, 2))}, hidden=False)
    student = CaseResult("ornek~probe", True, False, outputs={"return": np.full((3, 4), np.nan)})
    report = probe_report(ProbeSpec(bases=("ornek",), result="return"), base, student, {"return": REFERENCE})
    assert [m.msgid for m in report.diagnoses] == [M.PROBE_NONFINITE]
    json.dumps(report.to_dict(), allow_nan=False)
