"""The lesson figures' numbers (NumPy, at import) and the markup they are served as."""

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from courses.authoring import load_course
from courses.visuals import (
    VISUALS,
    attention_steps,
    blend_steps,
    fmt,
    fmt_vector,
    load_toy_model,
    render_visual,
    rotate_weights,
    softmax_rows,
)

FIXTURE = Path(__file__).parent / "fixtures" / "visuals"
FIXTURE_LESSON = FIXTURE / "01-figures"
COURSE_LESSON = (
    Path(__file__).resolve().parent.parent / "courses" / "content" / "attention" / "07-visual-attention"
)


def render(name: str, lesson_dir: Path = FIXTURE_LESSON) -> str:
    markup, problem = render_visual(name, lesson_dir)
    assert problem is None, problem
    return markup


# --- numbers ------------------------------------------------------------------------------


def test_softmax_rows_sum_to_one_and_masked_scores_get_nothing():
    weights = softmax_rows(np.array([[1000.0, 999.0, -np.inf], [0.0, 0.0, 0.0]]))
    assert np.allclose(weights.sum(axis=1), 1)
    assert weights[0, 2] == 0
    assert np.allclose(weights[1], 1 / 3)


def test_attention_steps_reproduce_the_scaled_dot_product_lesson_example():
    Q = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    steps = attention_steps(Q, Q, Q, causal=True)
    assert np.allclose(steps["scores"], np.array(Q) @ np.array(Q).T)
    assert steps["scaled"][0, 1] == -np.inf
    assert np.allclose(steps["weights"].sum(axis=1), 1)
    assert np.allclose(np.round(steps["output"], 3), [[1.0, 0.0], [0.33, 0.67], [0.752, 0.752]])


def test_rotate_weights_match_the_table_in_the_visual_attention_lesson():
    keys = [[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0]]
    expected = {
        0: (0.867, 0.117, 0.016),
        45: (0.486, 0.486, 0.029),
        90: (0.107, 0.787, 0.107),
        180: (0.016, 0.117, 0.867),
    }
    for angle, shares in expected.items():
        weights = rotate_weights(keys, angle)
        assert np.allclose(np.round(weights, 3), shares), angle
        assert weights.sum() == pytest.approx(1)


def test_scaled_rotation_divides_scores_by_root_two():
    weights = rotate_weights([[1.0, 0.0], [0.0, 1.0]], 0, scaled=True)
    assert weights == pytest.approx(softmax_rows(np.array([1 / np.sqrt(2), 0.0])))


def test_numbers_are_shown_with_a_turkish_decimal_comma_and_never_as_minus_zero():
    assert fmt(0.8668) == "0,867"
    assert fmt(-0.0001) == "0,000"
    assert fmt(-1.5, 2) == "-1,50"
    assert fmt(-np.inf) == "−∞"
    assert fmt(0.0625) == "0,062"  # half to even, like the browser's roundingMode "halfEven"
    assert fmt_vector([2.0, 0.5]) == "(2,000; 0,500)"


# --- the course's toy model: what the lesson text says about it ---------------------------


@pytest.fixture(scope="module")
def course_model():
    return load_toy_model(COURSE_LESSON)


def test_course_heatmap_rows_sum_to_one_and_later_words_get_nothing(course_model):
    for sentence in course_model.sentences:
        weights = course_model.self_attention(sentence)["weights"]
        assert np.allclose(weights.sum(axis=1), 1)
        assert np.all(np.triu(weights, k=1) == 0)
        assert np.all(weights[np.tril_indices(len(weights))] > 0)


def test_course_cay_looks_most_at_dere_in_one_sentence_and_kahvaltida_in_the_other(course_model):
    most = {}
    for sentence in course_model.sentences:
        row = course_model.self_attention(sentence)["weights"][sentence.focus]
        assert sentence.tokens[sentence.focus] == "çay"
        most[sentence.id] = sentence.tokens[int(np.argmax(row))]
    assert most == {"dere": "Dere", "kahvalti": "Kahvaltıda"}


def test_course_blend_pulls_cay_toward_water_in_one_sentence_and_drink_in_the_other(course_model):
    assert course_model.features[:2] == ["su", "içecek"]
    dere, kahvalti = (blend_steps(course_model, s) for s in course_model.sentences)
    assert np.allclose(dere["own"], [1.0, 1.0]) and np.allclose(kahvalti["own"], [1.0, 1.0])
    assert np.allclose(dere["new"], dere["own"] + dere["weights"] @ dere["values"])
    assert dere["new"][0] > 2 and dere["new"][1] < 1.2  # toward "su"
    assert kahvalti["new"][1] > 2 and kahvalti["new"][0] < 1.2  # toward "içecek"


def test_the_course_lessons_render_their_figures_without_problems():
    source = load_course(COURSE_LESSON.parent)
    assert [str(p) for p in source.problems if "visual" in p.message] == []


# --- markup -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["heatmap", "rotate", "blend", "playground"])
def test_figure_markup_obeys_the_content_security_policy(name):
    markup = render(name)
    assert not re.search(r"\sstyle\s*=", markup)
    assert not re.search(r"\son[a-z]+\s*=", markup)
    for script in re.findall(r"<script[^>]*>", markup):
        assert 'type="application/json"' in script


@pytest.mark.parametrize("name", ["heatmap", "rotate", "blend", "playground"])
def test_figure_has_a_turkish_caption_labelled_graphics_and_labelled_controls(name):
    markup = render(name)
    assert markup.startswith(f'<figure class="visual visual-{name}" data-visual="{name}"')
    assert markup.count("<figcaption>") == 1 and markup.endswith("</figcaption></figure>")
    for svg in re.findall(r"<svg[^>]*>", markup):
        assert 'role="img"' in svg and 'aria-label="' in svg and "viewBox" in svg
    # Every input and select sits inside a <label> (or is a labelled radio in a fieldset).
    controls = len(re.findall(r"<input|<select", markup))
    labelled = len(re.findall(r"<label[^>]*>(?:(?!</label>).)*?<(?:input|select)", markup, re.S))
    assert controls == labelled
    assert 'aria-live="polite"' in markup
    assert "<table" in markup  # the view without JavaScript


def test_heatmap_table_shows_server_weights_and_masks_later_words():
    markup = render("heatmap")
    model = load_toy_model(FIXTURE_LESSON)
    for sentence in model.sentences:
        weights = model.self_attention(sentence)["weights"]
        for value in weights[np.tril_indices(len(weights))]:
            assert f'data-value="{value:.6f}">{fmt(value)}</td>' in markup
    assert markup.count('<td class="masked">') == 3 + 3  # upper triangles of two 3×3 maps
    assert 'class="is-focus" data-row="2"' in markup  # "çay" row highlighted


def test_rotate_table_lists_the_authors_angles():
    markup = render("rotate")
    for angle in (0, 90):
        weights = rotate_weights([[1.0, 0.0], [0.0, 1.0]], angle, scaled=True)
        row = re.search(rf'<tr data-angle="{angle}">(.*?)</tr>', markup).group(1)
        assert [fmt(w) for w in weights] == re.findall(r">([-0-9,]+)</td>", row)
    assert 'transform="rotate(-45 ' in markup  # the query starts at 45°


def test_playground_uses_the_lessons_matrices_or_the_defaults(tmp_path):
    markup = render("playground")
    steps = attention_steps(
        [[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    )
    weights_table = re.search(r'data-result="weights">(.*?)</table>', markup, re.S).group(1)
    assert re.findall(r'data-j="\d">([-0-9,]+)</td>', weights_table) == [
        fmt(w) for w in steps["weights"].ravel()
    ]
    assert markup.count("readonly>") == 4 + 6 + 6  # Q 2×2, K 3×2, V 3×2: readable, not editable, without JS
    default = render("playground", tmp_path)  # a lesson without toy.toml: the lesson-6 example
    lesson_six = attention_steps(*[[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]] * 3)
    assert default.count("readonly>") == 18
    assert f'data-i="2" data-j="1">{fmt(lesson_six["output"][2, 1])}</td>' in default


def test_author_mistakes_in_toy_toml_become_course_problems(tmp_path):
    course = tmp_path / "visuals"
    shutil.copytree(FIXTURE, course)
    toy = course / "01-figures" / "toy.toml"
    toy.write_text(
        toy.read_text(encoding="utf-8").replace(
            'tokens = ["Dere", "akan", "çay"]', 'tokens = ["Dere", "akar", "çay"]'
        ),
        encoding="utf-8",
    )
    messages = [p.message for p in load_course(course).problems]
    assert any(
        "visual 'heatmap'" in m and "no embedding for 'akar'" in m and "toy.toml line" in m for m in messages
    )
    assert any("visual 'blend'" in m for m in messages)

    toy.unlink()
    messages = [p.message for p in load_course(course).problems]
    assert (
        sum("needs toy.toml" in m for m in messages) == 3
    )  # heatmap, rotate, blend; playground has defaults


def test_every_visual_named_in_the_issue_is_registered():
    assert {"playground", "heatmap", "rotate", "blend"} <= set(VISUALS)
