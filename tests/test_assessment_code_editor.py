"""Code exercises on an assessment's page get the lesson pages' editor (CodeMirror) and their
live status (the status poll, held with ?wait=1): code handed in shows its verdict without a
reload, and an assessment that keeps feedback back shows only what its policy allows."""

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from browser.test_accessibility import serious_violations
from django.utils import timezone
from playwright.sync_api import expect

from assessments.models import HandIn
from courses.exercises import check_exercises
from courses.importer import import_course
from courses.models import Course

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOMEWORK = """slug = "kod-odevi"
title = "Kod ödevi"
kind = "homework"
opens = {opens}
due = {due}
feedback = "{feedback}"
items = ["attn"]
"""
PAGE = "/kurs/lab/degerlendirme/kod-odevi/"
SOLUTION = """import numpy as np


def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""


def lab_with_homework(tmp_path, feedback: str) -> Course:
    root = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", root)
    now = timezone.localtime(timezone.now()).replace(microsecond=0)
    (root / "assessments").mkdir()
    (root / "assessments" / "kod-odevi.toml").write_text(
        HOMEWORK.format(
            opens=(now - timedelta(hours=1)).isoformat(),
            due=(now + timedelta(hours=2)).isoformat(),
            feedback=feedback,
        ),
        encoding="utf-8",
    )
    import_course(root, prepare_exercises=lambda source: check_exercises(source, build=True))
    return Course.objects.get(slug="lab")


@pytest.mark.parametrize("feedback", ["immediate", "after_close"])
def test_code_in_an_assessment_has_the_editor_and_its_verdict_arrives_live(
    feedback, page, transactional_db, tmp_path, grading_worker, logged_in, write_code
):
    course = lab_with_homework(tmp_path, feedback)
    logged_in(course)
    page.goto(page.base_url + PAGE)
    item = page.locator("#item-attn")
    expect(item.locator(".cm-editor")).to_be_visible()  # CodeMirror, not the bare textarea
    expect(item.locator("textarea")).to_be_hidden()
    expect(item.locator(".cm-lineNumbers")).to_contain_text("1")

    write_code(item, SOLUTION.replace("/ np.sqrt(Q.shape[-1])", ""))
    page.evaluate("window.notReloaded = true")
    item.get_by_role("button", name="Notlandırmaya gönder").click()
    result = item.locator("[data-result]")
    if feedback == "immediate":
        expect(result).to_contain_text("Bazı durumlar geçmedi", timeout=30_000)
        expect(result).to_contain_text("Ölçeklemeyi unutma.")  # the catalog's hint, as in lessons
    else:  # the poll shows what the policy allows: received, nothing about the cases
        expect(result).to_contain_text("değerlendirme kapandıktan sonra", timeout=30_000)
        expect(result).not_to_contain_text("geçmedi")
    assert page.evaluate("window.notReloaded") is True  # the verdict came without a reload
    assert HandIn.objects.filter(item="attn", submission__isnull=False).count() == 1
    assert serious_violations(page) == []  # axe-core, as for every other page

    write_code(item, SOLUTION)  # a run on the examples shows its result live too, and counts nothing
    item.get_by_role("button", name="Örneklerde çalıştır").click()
    expect(result).to_contain_text("Bütün örnekler geçti", timeout=30_000)
    assert HandIn.objects.filter(item="attn").count() == 1


QUIZ_HOMEWORK = """slug = "soru-odevi"
title = "Soru ödevi"
kind = "homework"
opens = {opens}
due = {due}
items = ["score-fill", "roles"]
"""


def test_a_code_blank_answer_in_an_assessment_shows_its_result_without_a_reload(
    page, transactional_db, tmp_path, grading_worker, logged_in
):
    root = tmp_path / "quiz"
    shutil.copytree(FIXTURES / "quiz", root)
    now = timezone.localtime(timezone.now()).replace(microsecond=0)
    (root / "assessments").mkdir()
    (root / "assessments" / "soru-odevi.toml").write_text(
        QUIZ_HOMEWORK.format(
            opens=(now - timedelta(hours=1)).isoformat(), due=(now + timedelta(hours=2)).isoformat()
        ),
        encoding="utf-8",
    )
    import_course(root, prepare_exercises=lambda source: check_exercises(source, build=True))
    logged_in(Course.objects.get(slug="quiz"))
    page.goto(page.base_url + "/kurs/quiz/degerlendirme/soru-odevi/")
    # Matching gets the lesson pages' chips to drag (js/selftest.js), the selects staying as they are.
    expect(page.locator("#item-roles .chip-tray")).to_be_visible()

    question = page.locator("#item-score-fill")
    question.get_by_label("1. boşluk").fill("K.T")
    question.get_by_role("button", name="Cevabımı kaydet").click()  # a plain post, back to the page
    expect(question.locator("[data-live-pending]")).to_be_attached()
    page.evaluate("window.notReloaded = true")
    expect(question).to_contain_text("Puan: 1 üzerinden 1.", timeout=30_000)
    assert page.evaluate("window.notReloaded") is True  # the checked answer came without a reload
