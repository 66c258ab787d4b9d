"""The built-in course end to end in chromium: every lesson in order, one question of each
kind (the matrix typed by keyboard), one exercise run and submitted to a real worker, and the
figures used by keyboard."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

COURSE = Path(__file__).resolve().parents[2] / "courses" / "content" / "attention"
LESSONS = [
    "query",
    "key",
    "value",
    "qkv",
    "attention-score",
    "scaled-dot-product",
    "visual-attention",
    "self-cross",
]
ATTENTION = """import numpy as np


def attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V
"""


@pytest.fixture
def course(transactional_db):
    from courses.exercises import check_exercises
    from courses.importer import import_course
    from courses.models import Course

    import_course(COURSE, prepare_exercises=lambda source: check_exercises(source, build=True))
    return Course.objects.get(slug="attention")


def check(question):
    question.get_by_role("button", name="Cevabımı kontrol et").click()


def test_a_student_walks_the_whole_course(page, course, logged_in, grading_worker, write_code):
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    student = logged_in(course)
    page.goto(page.base_url + "/kurs/attention/")
    page.get_by_role("link", name="Query: Ne arıyorum?").click()
    for index, slug in enumerate(LESSONS):
        expect(page).to_have_url(page.base_url + f"/kurs/attention/{slug}/")
        assert page.locator("article.lesson math").count() > 0, slug
        assert page.locator("article.question").count() >= 3, slug
        assert page.locator("article.exercise").count() >= 1, slug

        if slug == "query":
            projection = page.locator("#q-query-projection")
            projection.get_by_label("eğitim sırasında öğrenilir").check()
            projection.get_by_label("her satırı bir tokenın Query vektörüdür").check()
            check(projection)
            expect(page.locator("#q-query-projection").get_by_text("Doğru!")).to_be_visible()

        if slug == "qkv":
            who = page.locator("#q-qkv-who-attends")
            who.get_by_label('"onu"nun Value\'su').check()
            check(who)
            expect(page.locator("#q-qkv-who-attends")).to_contain_text("Henüz değil.")
            page.locator("#q-qkv-who-attends").get_by_label(
                '"kitabı"nın Query\'si ile "onu"nun Key\'i'
            ).check()
            check(page.locator("#q-qkv-who-attends"))
            expect(page.locator("#q-qkv-who-attends").get_by_text("Doğru!")).to_be_visible()

            fill = page.locator("#q-qkv-score-fill")
            fill.locator("input.blank").fill("K.transpose()")
            check(fill)
            expect(page.locator("#q-qkv-score-fill").get_by_text("Doğru!")).to_be_visible()

            roles = page.locator("#q-qkv-roles")
            for left, right in (
                ("Query", "Ne arıyorum?"),
                ("Key", "Bende ne var?"),
                ("Value", "Ne veririm?"),
            ):
                roles.get_by_label(left, exact=True).select_option(label=right)
            roles.locator("select").last.select_option(label="Öğrenilen dönüşümler")
            check(roles)
            expect(page.locator("#q-qkv-roles").get_by_text("Doğru!")).to_be_visible()

            size = page.locator("#q-qkv-output-size")
            size.get_by_label("Cevabın").fill("80")
            check(size)
            expect(page.locator("#q-qkv-output-size").get_by_text("Doğru!")).to_be_visible()

        if slug == "attention-score":
            from courses.models import Question

            # The student's own variant, typed cell by cell (Tab goes along the rows).
            scores = Question.objects.get(slug="score-matrix").variant_for(student).params["scores"]
            matrix = page.locator("#q-score-matrix")
            matrix.get_by_label("Satır 1 (Ayşe), sütun 1 (Ayşe)").focus()
            for value in (value for row in scores for value in row):
                page.keyboard.type(str(value))
                page.keyboard.press("Tab")
            check(matrix)
            expect(page.locator("#q-score-matrix").get_by_text("Doğru!")).to_be_visible()

        if slug == "scaled-dot-product":
            # The ordering question by keyboard: the three wrong steps out, the rest moved up
            # with Alt+↑ into an order the dependencies allow.
            steps = page.locator("#q-sdp-steps-order")
            used = steps.locator("[data-used] [data-step]")
            by_root = steps.locator("[data-step]").filter(has_text="bölün")
            for step in (
                steps.locator("[data-step]", has_text="Query'ler boyunca"),
                steps.locator("[data-step]", has_text="maskeyle"),
                by_root.filter(has_not=page.locator("msqrt")),
            ):
                step.get_by_role("button", name="Dışarıda bırak").click()
            expect(steps.locator("[data-unused] [data-step]")).to_have_count(3)
            for place, text in enumerate(("hesaplayın", "bölün", "Yasaklı", "Key'ler boyunca", "ile çarpın")):
                texts = [t.strip() for t in used.all_inner_texts()]
                step = used.filter(has_text=text)
                step.focus()
                for _ in range(next(i for i, t in enumerate(texts) if text in t) - place):
                    page.keyboard.press("Alt+ArrowUp")
            check(steps)
            expect(page.locator("#q-sdp-steps-order").get_by_text("Doğru!")).to_be_visible()

            exercise = page.locator("#ex-attention-function")
            write_code(exercise, ATTENTION)
            exercise.get_by_role("button", name="Örneklerde çalıştır").click()
            expect(exercise.locator("[data-result]")).to_contain_text("Bütün örnekler geçti", timeout=30_000)
            exercise.get_by_role("button", name="Notlandırmaya gönder").click()
            expect(exercise.locator("[data-result]")).to_contain_text("Bütün durumlar geçti", timeout=30_000)

            playground = page.locator('figure[data-visual="playground"]')
            output = playground.locator('[data-result="output"]')
            before = output.all_text_contents()
            field = playground.locator("input").first
            field.focus()
            page.keyboard.press("Control+A")
            page.keyboard.type("3")
            expect(output).not_to_have_text(before)

        if slug == "visual-attention":
            rotate = page.locator('figure[data-visual="rotate"]')
            weights = rotate.locator("[data-weight]")
            before = weights.all_text_contents()
            rotate.locator('input[type="range"]').focus()
            for _ in range(6):
                page.keyboard.press("ArrowRight")
            expect(weights).not_to_have_text(before)

            heatmap = page.locator('figure[data-visual="heatmap"]')
            visible = heatmap.locator("[data-panel]:visible")
            first_panel = visible.first.get_attribute("data-panel")
            heatmap.locator(".choice-group input").first.focus()
            page.keyboard.press("ArrowRight")
            expect(heatmap.locator("[data-panel]:visible").first).not_to_have_attribute(
                "data-panel", first_panel
            )

            blend = page.locator('figure[data-visual="blend"]')
            blend.locator(".choice-group input").first.focus()
            page.keyboard.press("ArrowRight")
            expect(blend.locator("[data-readout]")).to_be_visible()

        if index + 1 < len(LESSONS):
            page.get_by_role("link", name="Sonraki:").click()
    assert errors == []
