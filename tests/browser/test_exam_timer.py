"""A timed exam in chromium, its clock running out for real (issue 15): the page counts the
server's time down, at zero the exam is handed in with the answers saved, and an answer sent
afterwards (from a tab still open on the exam) is refused with a clear message."""

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from assessments.models import AssessmentSession, ExamLogEntry
from courses.importer import import_course
from courses.models import Attempt, Course

pytestmark = [pytest.mark.browser]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NUMERIC = """
[[questions]]
slug = "{slug}"
kind = "numeric"
prompt = "{answer} kaçtır?"
answer = {answer}
tolerance = 0.001
"""
EXAM = """slug = "kisa-sinav"
title = "Kısa sınav"
kind = "exam"
opens = {opens}
due = {due}
time_limit_minutes = 1
password = "gizli"
feedback = "after_close"
items = ["n1", "n2"]
"""
SECONDS = 8  # the exam's time once started: the test shortens its server-side deadline to this


@pytest.fixture
def exam_course(transactional_db, tmp_path) -> Course:
    root = tmp_path / "mini"
    shutil.copytree(FIXTURES / "mini", root)
    (root / "02-second" / "questions.toml").write_text(
        "".join(NUMERIC.format(slug=f"n{i}", answer=i) for i in (1, 2)), encoding="utf-8"
    )
    now = timezone.localtime(timezone.now()).replace(microsecond=0)
    (root / "assessments").mkdir()
    (root / "assessments" / "kisa-sinav.toml").write_text(
        EXAM.format(opens=(now - timedelta(hours=1)).isoformat(), due=(now + timedelta(hours=2)).isoformat()),
        encoding="utf-8",
    )
    import_course(root)
    return Course.objects.get(slug="mini")


def test_a_short_exam_runs_out_hands_in_and_refuses_later_answers(page, exam_course, logged_in):
    student = logged_in(exam_course)
    exam_url = page.base_url + "/kurs/mini/degerlendirme/kisa-sinav/"
    page.goto(exam_url)
    page.get_by_label("Parola").fill("gizli")
    page.get_by_role("button", name="Sınavı başlat").click()
    expect(page.get_by_role("timer")).to_contain_text("Kalan süre:")

    # One minute is the shortest limit a file can give; the server's deadline is made shorter.
    deadline = timezone.now() + timedelta(seconds=SECONDS)
    AssessmentSession.objects.filter(user=student).update(deadline=deadline)
    page.reload()
    clock = page.locator("[data-time-left]")
    first = clock.inner_text()
    assert first.startswith("0:0"), first
    page.wait_for_timeout(1500)
    assert clock.inner_text() != first  # it runs down

    finish = page.get_by_role("button", name="Sınavı şimdi teslim et")
    page.once("dialog", lambda dialog: dialog.dismiss())  # "Hand in now?": no
    finish.click()
    expect(page.get_by_role("timer")).to_be_visible()
    assert AssessmentSession.objects.get(user=student).submitted_at is None

    page.locator("#item-n1 input[name=value]").fill("1")
    page.locator("#item-n1").get_by_role("button", name="Cevabımı kaydet").click()
    expect(page.locator(".message-success")).to_contain_text("itibarıyla alındı.")

    # The same student in a window without scripts (no clock to hand in), left open on the exam.
    other = page.context.browser.new_context(
        storage_state=page.context.storage_state(), java_script_enabled=False, locale="tr-TR"
    )
    stale = other.new_page()
    stale.goto(exam_url)
    stale.locator("#item-n2 input[name=value]").fill("2")

    # At zero the page hands the exam in by itself.
    expect(page.get_by_text("Süre doldu: sınavınız kaydettiğiniz cevaplarla teslim edildi.")).to_be_visible(
        timeout=(SECONDS + 5) * 1000
    )
    expect(page.get_by_role("timer")).to_have_count(0)
    expect(page.locator("form.answer-form")).to_have_count(0)
    expect(
        page.get_by_text("teslim edildi; kaydettiğiniz cevaplar sayılır, artık cevap alınmaz.")
    ).to_be_visible()

    stale.locator("#item-n2").get_by_role("button", name="Cevabımı kaydet").click()
    expect(stale.get_by_text("Bu sınavı teslim ettiniz; cevaplar artık değiştirilemez.")).to_be_visible()
    other.close()

    session = AssessmentSession.objects.get(user=student)
    assert session.submitted_at is not None and session.submitted_at <= session.deadline
    assert list(Attempt.objects.filter(user=student).values_list("question__slug", flat=True)) == ["n1"]
    events = list(ExamLogEntry.objects.filter(user=student).values_list("event", flat=True))
    assert events == ["started", "saved", "time_up", "refused"]


def test_exam_dashboard_and_gradebook_pages_have_no_serious_accessibility_violation(
    page, exam_course, logged_in, make_user
):
    from tests.browser.test_accessibility import serious_violations

    logged_in(exam_course)
    exam_url = page.base_url + "/kurs/mini/degerlendirme/kisa-sinav/"
    page.goto(exam_url)
    found = {"start page": serious_violations(page)}
    page.get_by_label("Parola").fill("gizli")
    page.get_by_role("button", name="Sınavı başlat").click()
    page.locator("#item-n1 input[name=value]").fill("1")
    page.locator("#item-n1").get_by_role("button", name="Cevabımı kaydet").click()
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 844})
        page.goto(exam_url)
        found[f"exam {width}"] = serious_violations(page)
        page.goto(page.base_url + "/panom/")
        expect(page.get_by_role("heading", name="Notlandırılan değerlendirmeler")).to_be_visible()
        found[f"dashboard {width}"] = serious_violations(page)

    hoca = make_user("hoca", password="Gizli-parola-2026")
    exam_course.instructors.add(hoca)
    page.context.clear_cookies()
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill("hoca")
    page.locator("#id_password").fill("Gizli-parola-2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.set_viewport_size({"width": 1280, "height": 844})
    page.goto(page.base_url + "/egitmen/mini/degerlendirme/kisa-sinav/")
    found["gradebook"] = serious_violations(page)
    page.get_by_role("link", name="ogrenci").click()
    expect(page.get_by_role("heading", name="Sınav kaydı")).to_be_visible()
    found["student page"] = serious_violations(page)
    assert not {name: v for name, v in found.items() if v}
