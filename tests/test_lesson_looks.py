"""How a lesson page reads: numbered question cards, an outline of the lesson and of its
questions with the student's progress beside the text on wide screens, framed tables."""

import re
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from courses.templatetags.lesson_outline import lesson_outline

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.django_db


def text_of(html: str) -> str:
    html = re.sub(r"<!--.*?-->|<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def card_titles(html: str) -> list[str]:
    return [
        text_of(t) for t in re.findall(r'<h3 id="q-[\w-]+-title" class="item-title">(.*?)</h3>', html, re.S)
    ]


def test_question_cards_are_numbered_in_lesson_order(student):
    html = student.get(reverse("lesson", args=["quiz", "selftest"])).text
    assert card_titles(html) == [f"Soru {n}" for n in range(1, 7)]


def test_a_card_keeps_its_number_after_an_answer(student):
    fragment = student.post(
        reverse("answer_question", args=["quiz", "selftest", "true-facts"]),
        {"options": ["a"]},
        HTTP_X_REQUESTED_WITH="dikkat",
    ).text
    assert card_titles(fragment) == ["Soru 2"]


def test_cards_are_numbered_in_english_too(student):
    student.cookies["django_language"] = "en"
    html = student.get(reverse("lesson", args=["quiz", "selftest"])).text
    assert card_titles(html)[:2] == ["Question 1", "Question 2"]


def test_the_outline_lists_the_questions_with_the_students_progress(student):
    student.post(reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qk"})
    student.post(reverse("answer_question", args=["quiz", "selftest", "true-facts"]), {"options": ["a"]})
    html = student.get(reverse("lesson", args=["quiz", "selftest"])).text
    outline = html[
        html.index('<nav class="lesson-outline"') : html.index(
            "</nav>", html.index('<nav class="lesson-outline"')
        )
    ]
    entries = [text_of(li) for li in re.findall(r"<li\b.*?</li>", outline, re.S)]
    assert entries[:3] == ["Soru 1 ✓ çözüldü", "Soru 2 denendi", "Soru 3"]
    assert 'href="#q-who-attends"' in outline
    assert "Bu derste" in text_of(outline)


def test_sections_get_anchors_and_markdown_tables_a_frame_that_scrolls():
    body = (
        "<h2>Üç ayrı sayı</h2><p>…</p><table><thead><tr><th>Kavram</th></tr></thead></table>"
        '<h2 id="kendi">Neden <math><msqrt><mi>d</mi></msqrt></math>?</h2>'
        '<div class="table-scroll"><table class="visual-table"><tr><td>1</td></tr></table></div>'
    )
    outline = lesson_outline(body)
    assert [section_id for section_id, _ in outline.sections] == ["bolum-1", "kendi"]
    assert str(outline.sections[1][1]).startswith("Neden <math>")
    assert '<h2 id="bolum-1">Üç ayrı sayı</h2>' in outline.html
    assert (
        '<div class="table-scroll" tabindex="0" role="region" aria-label="Tablo"><table class="lesson-table">'
        "<thead><tr><th>Kavram</th></tr></thead></table></div>"
    ) in outline.html
    assert outline.html.count('class="table-scroll"') == 2  # the figure's table keeps its own frame only


def test_css_gives_lesson_tables_borders_and_wide_screens_an_outline():
    css = (ROOT / "static/css/site.css").read_text()
    cell = re.search(r"\.lesson-table th, \.lesson-table td \{([^}]*)\}", css).group(1)
    assert "border: 1px solid" in cell and "padding:" in cell
    wide = css[css.index("@media (min-width: 75rem)") :]
    assert re.search(r"\.lesson-layout \{[^}]*display: grid", wide)
    assert re.search(r"\.lesson-outline \{[^}]*position: sticky", wide)
    assert re.search(
        r"(?m)^\.lesson-outline \{ display: none; \}", css
    )  # phones: the page reads straight down


def test_a_scrolling_table_keeps_its_hidden_labels_inside_it():
    # A visually-hidden label is absolutely positioned: without a positioned frame it sits past
    # the right edge of a phone's screen and the whole page scrolls sideways.
    css = (ROOT / "static/css/site.css").read_text()
    rule = re.search(r"(?m)^\.table-scroll \{([^}]*)\}", css).group(1)
    assert "overflow-x: auto" in rule and "position: relative" in rule
