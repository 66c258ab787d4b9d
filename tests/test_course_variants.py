"""The shipped course's per-student variants, as an instructor relies on them.

The course is loaded from its files and every question generator is run in the sandbox, as
``validate_course`` does (courses.exercises.check_generated_questions). Then, variant by
variant: enough numeric and fill-in questions have variants, nothing is left unfilled, the
numbers read the Turkish way, every numeric answer is what NumPy computes from the variant's
own parameters and stands apart from its catalogued wrong values, no two variants share an
answer, and every catalogued wrong filling of a fill-in gives other results than the
reference on the variant's own hidden cases.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from courses.authoring import load_course
from courses.exercises import check_generated_questions
from courses.kinds.fill_in import fill

COURSE = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"

# The questions that have variants, and how many each has at least.
VARIANT_COUNTS = {
    "query-param-count": 8,  # whole-number answers: more variants would repeat one
    "query-fill": 20,
    "key-dot-product": 20,
    "key-catalogue-word": 20,
    "value-blend-number": 20,
    "score-softmax-two": 16,  # the answer depends only on s1 - s2
    "score-scale-fill": 20,
    "score-matrix": 20,
    "sdp-shapes": 20,
    "sdp-mask-fill": 20,
    "cross-output-rows": 20,
}


@pytest.fixture(scope="module")
def source():
    course = load_course(COURSE)
    assert [str(p) for p in course.problems] == []
    assert [str(p) for p in check_generated_questions(course)] == []
    return course


@pytest.fixture(scope="module")
def generated(source):
    return {q.slug: q for q in source.all_questions() if q.generator}


def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- which questions have variants ---------------------------------------------------------


def test_a_third_of_the_numeric_and_fill_in_questions_have_variants(source, generated):
    for kind in ("numeric", "fill_in"):
        questions = [q for q in source.all_questions() if q.kind == kind]
        with_variants = [q for q in questions if q.generator and q.variant_count >= 8]
        assert 3 * len(with_variants) >= len(questions), (kind, [q.slug for q in with_variants])
    both = [q for q in source.all_questions() if q.kind in ("numeric", "fill_in")]
    twenty = [q for q in both if q.generator and q.variant_count >= 20]
    assert 3 * len(twenty) >= len(both), [q.slug for q in twenty]
    kinds = {q.kind for q in generated.values()}
    assert {"single_choice", "matching"} <= kinds


def test_every_listed_question_has_its_variants(generated):
    assert set(generated) == set(VARIANT_COUNTS)
    for slug, least in VARIANT_COUNTS.items():
        question = generated[slug]
        assert question.variant_count >= least, slug
        assert len(question.variants) == question.variant_count, slug
        # Students really get different questions (a few repeats are harmless).
        distinct = {json.dumps(v["params"], sort_keys=True) for v in question.variants}
        assert len(distinct) >= 0.75 * question.variant_count, slug


# --- what a student reads --------------------------------------------------------------------

_MATH_DECIMAL = re.compile(r"</mn>\s*(?:<mrow>)?\s*<mo[^>]*>,</mo>\s*(?:</mrow>)?\s*<mn>")


def _shown_text(html: str) -> str:
    """The text of rendered HTML as a student reads it: code left out, MathML decimals
    joined ("<mn>0</mn><mo>,</mo><mn>5</mn>" -> "0,5")."""
    html = re.sub(r"<pre\b.*?</pre>|<code\b.*?</code>", " ", html, flags=re.S)
    html = _MATH_DECIMAL.sub(",", html)
    return re.sub(r"<[^>]+>", " ", html)


def _markdown_html(variant: dict) -> list[str]:
    """Every piece of rendered Markdown of one variant: prompt, explanation, options, hints, …"""
    found = [variant["prompt_html"], variant["explanation_html"]]

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key.endswith("html") and isinstance(item, str):
                    found.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(variant["spec"])
    return found


def test_no_placeholder_is_left_in_any_variant(generated):
    for question in generated.values():
        for variant in question.variants:
            everything = json.dumps(variant["spec"], ensure_ascii=False) + "".join(_markdown_html(variant))
            assert "{{" not in everything, (question.slug, variant["index"])


def test_decimals_are_written_with_a_comma(generated):
    for question in generated.values():
        for variant in question.variants:
            for html in _markdown_html(variant):
                text = _shown_text(html)
                assert not re.search(r"\d\.\d", text), (question.slug, variant["index"], text)
            if question.kind != "numeric":
                continue
            answer = variant["spec"]["answer"]
            if answer != int(answer):
                # The explanation works the variant's own numbers through to its answer.
                written = f"{answer:.6g}".replace(".", ",")
                assert written in _shown_text(variant["explanation_html"]), (question.slug, variant["index"])


def test_the_prompts_show_each_variants_own_numbers(generated):
    dot = generated["key-dot-product"].variants[0]
    assert f"{dot['params']['k1']:g}".replace(".", ",") in _shown_text(dot["prompt_html"])
    rows = generated["cross-output-rows"]
    for variant in rows.variants:
        [correct] = [o for o in variant["spec"]["options"] if o["correct"]]
        label = _shown_text(correct["html"]).strip()
        assert label.startswith(f"{variant['params']['n_q']}:"), (variant["index"], label)
    fill = generated["key-catalogue-word"]
    for variant in fill.variants:
        p = variant["params"]
        assert variant["spec"]["code"].startswith(f"i, j = {p['i']}, {p['j']}\n")


# --- numeric answers -----------------------------------------------------------------------


def _recomputed(slug: str, p: dict) -> float:
    """Each numeric answer again, with NumPy, from the variant's parameters alone."""
    if slug == "query-param-count":
        return np.zeros((p["d_model"], p["d_k"])).size
    if slug == "key-dot-product":
        return np.dot([p["q1"], p["q2"], p["q3"]], [p["k1"], p["k2"], p["k3"]])
    if slug == "value-blend-number":
        V = np.array([[p["v11"], p["v12"]], [p["v21"], p["v22"]], [p["v31"], p["v32"]]])
        return (np.array([p["a1"], p["a2"], p["a3"]]) @ V)[1]
    if slug == "score-softmax-two":
        return softmax([p["s1"], p["s2"]])[0]
    raise AssertionError(f"no recomputation for {slug}")


def test_numeric_answers_are_numpys_and_apart_from_the_wrong_values(generated):
    numeric = [q for q in generated.values() if q.kind == "numeric"]
    assert numeric
    for question in numeric:
        for variant in question.variants:
            spec, where = variant["spec"], (question.slug, variant["index"])
            answer, tolerance = spec["answer"], spec["tolerance"]
            assert abs(answer - _recomputed(question.slug, variant["params"])) <= tolerance, where
            wrong = [w["value"] for w in spec["wrong_values"]]
            assert wrong, where
            for value in wrong:
                # Well apart: a slip is never graded right, nor taken for a near miss.
                assert abs(value - answer) >= 10 * tolerance, (where, value)
            for n, value in enumerate(wrong):
                for other in wrong[n + 1 :]:
                    assert abs(value - other) > tolerance, (where, value, other)


def test_the_score_matrix_is_q_times_k_transposed_and_apart_from_its_slips(generated):
    for variant in generated["score-matrix"].variants:
        params, spec = variant["params"], variant["spec"]
        scores = np.array(params["Q"]) @ np.array(params["K"]).T
        assert np.array_equal(spec["answer"], scores)
        assert [w["misconception"] for w in spec["wrong"]] == ["query-key-swap", "query-self-product"]
        for wrong in spec["wrong"]:  # at least four cells apart: no slip passes for partly right
            assert (np.abs(np.array(wrong["matrix"]) - scores) > spec["tolerance"]).sum() >= 4


def test_no_variants_answer_is_printed_in_its_lesson(source):
    """The answer as the variant's explanation writes it ("13,1", "0,7631") is nowhere in the
    lesson's own text. (A lesson number merely within tolerance of an answer, such as the
    softmax example's 0,090 next to a weight of 0,0911, is a coincidence and allowed.)"""
    for lesson in source.lessons:
        numbers = set(re.findall(r"\d+(?:,\d+)?", _shown_text(lesson.body_html)))
        for question in lesson.questions:
            if not (question.generator and question.kind == "numeric"):
                continue
            for variant in question.variants:
                answer = variant["spec"]["answer"]
                if answer == int(answer) and abs(answer) < 10:
                    continue  # small whole numbers are everywhere; they give nothing away
                written = f"{abs(answer):.6g}".replace(".", ",")
                assert written not in numbers, (lesson.slug, question.slug, variant["index"], written)


def test_no_two_variants_share_an_answer(source, generated):
    assert [str(w) for w in source.warnings] == []
    for question in generated.values():
        if question.kind == "numeric":
            answers = [round(v["spec"]["answer"], 9) for v in question.variants]
            assert len(set(answers)) == len(answers), question.slug


# --- fill-in: the catalogue still catches its mistakes in every variant --------------------


def _run(code: str, inputs: dict, names: list[str]):
    namespace = {"np": np}
    for name, value in inputs.items():  # as the grader loads them: booleans stay bool, numbers float64
        namespace[name] = np.asarray(value, dtype=bool if _booleans(value) else float)
    try:
        with np.errstate(all="ignore"):
            exec(code, namespace)
        return [np.asarray(namespace[name]) for name in names]
    except Exception as exc:  # a wrong filling may not even run: that is caught too
        return type(exc).__name__


def _booleans(value) -> bool:
    flat = np.asarray(value, dtype=object).ravel()
    return flat.size > 0 and all(isinstance(x, bool) for x in flat)


def _same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return all(x.shape == y.shape and np.allclose(x, y, equal_nan=True) for x, y in zip(a, b))


def test_every_wrong_filling_differs_from_the_reference_on_its_variants_cases(generated):
    fill_ins = [q for q in generated.values() if q.kind == "fill_in"]
    assert fill_ins
    for question in fill_ins:
        for variant in question.variants:
            spec = variant["spec"]
            names, cases = spec["grader"]["results"], spec["grader"]["cases"]
            answers = [b["answer"] for b in spec["blanks"]]
            right = fill(spec["code"], [f"({a})" for a in answers])
            reference = [_run(right, case["inputs"], names) for case in cases]
            assert not any(isinstance(r, str) for r in reference), (question.slug, variant["index"])
            for index, blank in enumerate(spec["blanks"]):
                for wrong in blank["wrong"]:
                    filled = [f"({a})" for a in answers]
                    filled[index] = f"({wrong['pattern']})"
                    code = fill(spec["code"], filled)
                    runs = [_run(code, c["inputs"], names) for c in cases]
                    assert not all(_same(r, ref) for r, ref in zip(runs, reference)), (
                        question.slug,
                        variant["index"],
                        wrong["pattern"],
                    )
