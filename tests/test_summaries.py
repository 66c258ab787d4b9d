"""Course and lesson summaries show formulas as formulas, never as ASCII math or raw LaTeX."""

from pathlib import Path

from django.urls import reverse

from courses.templatetags.inline_math import inline_math

COURSE = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"


def test_the_course_page_shows_lesson_summaries_with_formulas(client, db, alice):
    from courses.importer import import_course

    import_course(COURSE)
    client.force_login(alice)
    page = client.get(reverse("course", args=["attention"])).text
    assert page.count("<math") >= 5, "the formulas in the summaries are MathML"
    for ascii_math in ("XW^Q", "√d_k", "QKᵀ/√d_k", "$"):
        assert ascii_math not in page.split("<main", 1)[1].split("</main>")[0], ascii_math


def test_text_around_a_formula_is_escaped_and_a_broken_formula_stays_text():
    assert inline_math("<b>x</b> ve $a^2$").startswith("&lt;b&gt;x&lt;/b&gt; ve <math")
    assert "\\nosuchcommand" in inline_math("$\\nosuchcommand$") and "<math" not in inline_math(
        "$\\nosuchcommand$"
    )
