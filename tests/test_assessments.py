"""Graded assessments (issue 15): files validated with file:line, credit by the time the server
received the work, late windows, overrides, exams with a server clock, refusals that store
nothing, and the assessment_scores JSON contract. The clock is frozen with time-machine."""

import json
import re
import shutil
import threading
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from assessments.models import (
    Assessment,
    AssessmentSession,
    ExamLogEntry,
    HandIn,
    ManualScore,
    StudentOverride,
)
from assessments.scoring import student_scores
from courses.authoring import load_course
from courses.importer import ImportRefused, import_course
from courses.models import Attempt, Course
from grader.models import Submission

IST = ZoneInfo("Europe/Istanbul")
FIXTURES = Path(__file__).parent / "fixtures"
BUILT_IN = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"


def at(text: str) -> datetime:
    """An Istanbul wall-clock time, e.g. at("2026-12-08 23:59")."""
    return datetime.fromisoformat(text).replace(tzinfo=IST)


NUMERIC = """
[[questions]]
slug = "{slug}"
kind = "numeric"
prompt = "{answer} kaçtır?"
answer = {answer}
tolerance = 0.001
"""

HOMEWORK = """slug = "odev"
title = "Ödev"
kind = "homework"
opens = 2026-12-01T09:00:00+03:00
due = 2026-12-08T23:59:00+03:00
closes = 2026-12-10T23:59:00+03:00
late = [
  { until = 2026-12-09T23:59:00+03:00, credit = 0.8 },
  { until = 2026-12-10T23:59:00+03:00, credit = 0.5 },
]
max_attempts = 2
items = ["first-choice", { pool = ["n1", "n2", "n3"], pick = 2, points = 2 }]
"""

EXAM = """slug = "sinav"
title = "Sınav"
kind = "exam"
opens = 2026-12-15T10:00:00+03:00
due = 2026-12-15T12:00:00+03:00
time_limit_minutes = 30
password = "gizli"
feedback = "after_close"
items = ["n1", "n2"]
"""


@pytest.fixture(autouse=True)
def long_sessions(settings):
    # The tests travel weeks ahead of the moment they log in.
    settings.SESSION_COOKIE_AGE = 10 * 365 * 24 * 3600


@pytest.fixture
def course_dir(tmp_path) -> Path:
    """The mini course with three numeric questions, a homework and an exam."""
    root = tmp_path / "mini"
    shutil.copytree(FIXTURES / "mini", root)
    questions = "".join(NUMERIC.format(slug=f"n{i}", answer=i) for i in (1, 2, 3))
    (root / "02-second" / "questions.toml").write_text(questions, encoding="utf-8")
    (root / "assessments").mkdir()
    (root / "assessments" / "odev.toml").write_text(HOMEWORK, encoding="utf-8")
    (root / "assessments" / "sinav.toml").write_text(EXAM, encoding="utf-8")
    return root


@pytest.fixture
def course(db, course_dir) -> Course:
    import_course(course_dir)
    return Course.objects.get(slug="mini")


@pytest.fixture
def homework(course) -> Assessment:
    return Assessment.objects.get(course=course, slug="odev")


@pytest.fixture
def exam(course) -> Assessment:
    return Assessment.objects.get(course=course, slug="sinav")


@pytest.fixture
def student(client, alice, course):
    course.enroll(alice)
    client.force_login(alice)
    return client


def post_answer(client, slug: str, value, assessment: str = "odev"):
    field = "option" if slug == "first-choice" else "value"
    return client.post(
        reverse("assessment_answer", args=["mini", assessment, slug]), {field: value}, follow=True
    )


def drawn(assessment, user) -> list[str]:
    return [entry["item"] for entry in assessment.items_for(user)]


def score_of(assessment, user, item: str):
    [row] = student_scores(assessment, [user])
    return next(i for i in row.items if i.item == item)


# -- authoring -----------------------------------------------------------------------------------


def write(root: Path, name: str, text: str) -> None:
    (root / "assessments").mkdir(exist_ok=True)
    (root / "assessments" / name).write_text(text, encoding="utf-8")


def test_assessment_problems_name_their_file_and_line(course_dir):
    write(
        course_dir,
        "bad.toml",
        """slug = "bad"
title = "Kötü"
kind = "homework"
opens = 2026-12-08T09:00:00+03:00
due = 2026-12-01T09:00:00+03:00
late = [{ until = 2026-12-09T23:59:00+03:00, credit = 1.5 }]
time_limit_minutes = 30
items = [
  "first-choice",
  "no-such-item",
  { pool = ["n1", "n2"], pick = 3 },
]
""",
    )
    problems = {str(p) for p in load_course(course_dir).problems}
    assert problems == {
        "mini/assessments/bad.toml:5: due must be after opens",
        "mini/assessments/bad.toml:6: a late window's credit must be a number in (0, 1], such as 0.8",
        "mini/assessments/bad.toml:7: time_limit_minutes is for exams only (homework has a due date instead)",
        "mini/assessments/bad.toml:10: no question or exercise with slug 'no-such-item' in this course",
        "mini/assessments/bad.toml:11: the pool has 2 item(s), too few to pick 3",
    }


def test_exam_rules_dates_with_offsets_and_late_windows_in_order(course_dir):
    write(
        course_dir,
        "kotu-sinav.toml",
        """slug = "kotu-sinav"
title = "Kötü sınav"
kind = "exam"
opens = 2026-12-15T10:00:00
due = 2026-12-15T12:00:00+03:00
closes = 2026-12-16T12:00:00+03:00
late = [
  { until = 2026-12-16T12:00:00+03:00, credit = 0.5 },
  { until = 2026-12-15T18:00:00+03:00, credit = 0.4 },
]
feedback = "later"
items = ["n1", "n1"]
""",
    )
    problems = {str(p) for p in load_course(course_dir).problems}
    assert problems == {
        "mini/assessments/kotu-sinav.toml:1: an exam needs time_limit_minutes (the time a student has once started)",
        "mini/assessments/kotu-sinav.toml:4: opens must be a date and time with its offset, such as "
        "2026-12-08T23:59:00+03:00 (unquoted)",
        "mini/assessments/kotu-sinav.toml:9: late windows must end after due and after the window before them",
        "mini/assessments/kotu-sinav.toml:11: feedback must be one of: immediate, score_only, after_close",
        "mini/assessments/kotu-sinav.toml:12: item 'n1' appears twice in this assessment",
    }


def test_validate_json_lists_assessments_and_keeps_its_other_keys(course_dir, capsys):
    call_command("validate_course", str(course_dir), "--json")
    summary = json.loads(capsys.readouterr().out)
    assert set(summary) == {"course", "lessons", "assessments", "variants", "problems"}
    assert summary["problems"] == []
    assert summary["assessments"] == [
        {"slug": "odev", "items": ["first-choice", "n1", "n2", "n3"], "kind": "homework"},
        {"slug": "sinav", "items": ["n1", "n2"], "kind": "exam"},
    ]


def test_built_in_course_has_a_homework_and_an_exam_that_validate():
    source = load_course(BUILT_IN)
    assert source.problems == []
    kinds = {a["slug"]: a["kind"] for a in source.summary_dict()["assessments"]}
    assert kinds == {"odev-1": "homework", "ara-sinav": "exam"}
    homework = next(a for a in source.assessments if a.slug == "odev-1")
    assert homework.opens == at("2026-12-01 09:00") and homework.closes == at("2026-12-10 23:59")


def test_import_updates_and_retires_assessments_and_a_bad_file_changes_nothing(course, course_dir):
    write(course_dir, "odev.toml", HOMEWORK.replace('title = "Ödev"', 'title = "Ödev 1"'))
    (course_dir / "assessments" / "sinav.toml").unlink()
    report = import_course(course_dir)
    assert "~ assessment odev (changed: title)" in report.changes
    assert "- assessment sinav (retired; student data kept)" in report.changes
    write(
        course_dir,
        "odev.toml",
        HOMEWORK.replace('title = "Ödev"', 'title = "Bozuk"').replace("pick = 2", "pick = 9"),
    )
    with pytest.raises(ImportRefused):
        import_course(course_dir)
    assert Assessment.objects.get(slug="odev").title == "Ödev 1"
    assert Assessment.objects.get(slug="sinav").retired


# -- credit follows the time the work was received -----------------------------------------------


def test_answer_before_due_gets_full_credit_and_late_windows_give_theirs(student, alice, homework):
    with time_machine.travel(at("2026-12-08 23:58"), tick=False):
        post_answer(student, "first-choice", "b")  # wrong, on time
    with time_machine.travel(at("2026-12-09 12:00"), tick=False):
        post_answer(student, "first-choice", "a")  # right, in the 80 % window
    item = score_of(homework, alice, "first-choice")
    assert (item.score, item.credit, item.late) == (0.8, 0.8, True)
    pool_item = drawn(homework, alice)[1]
    with time_machine.travel(at("2026-12-10 20:00"), tick=False):
        post_answer(student, pool_item, pool_item[1])
    item = score_of(homework, alice, pool_item)
    assert (item.score, item.credit, item.late) == (1.0, 0.5, True)  # 2 points × 0.5


def test_an_answer_from_a_page_opened_before_the_assessment_addresses_is_passed_on(student, alice, homework):
    """A page loaded before assessments had their own addresses posts to the lesson's answer
    address with ``assessment=``: the browser is sent on (307, the same post) and it counts once."""
    old_form = reverse("answer_question", args=["mini", "first", "first-choice"])
    with time_machine.travel(at("2026-12-08 12:00"), tick=False):
        response = student.post(old_form, {"option": "a", "assessment": "odev"})
        assert response.status_code == 307
        assert response["Location"] == reverse("assessment_answer", args=["mini", "odev", "first-choice"])
        student.post(old_form, {"option": "a", "assessment": "odev"}, follow=True)
    item = score_of(homework, alice, "first-choice")
    assert (item.score, item.credit, item.late) == (1.0, 1.0, False)
    assert HandIn.objects.filter(user=alice).count() == 1


def test_a_tampered_assessment_field_on_a_lesson_form_is_a_404_not_a_server_error(student, homework):
    for url, data in (
        (reverse("answer_question", args=["mini", "first", "first-choice"]), {"option": "a"}),
        (reverse("submit_code", args=["mini", "first", "first-choice"]), {"code": "x = 1", "mode": "submit"}),
    ):
        assert student.post(url, {**data, "assessment": "../../yok yok"}).status_code == 404


def test_code_received_before_due_but_graded_after_it_gets_full_credit(db, tmp_path, alice, client):
    root = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", root)
    write(
        root,
        "kod.toml",
        HOMEWORK.replace('"odev"', '"kod"').replace(
            'items = ["first-choice", { pool = ["n1", "n2", "n3"], pick = 2, points = 2 }]',
            'items = ["attn"]',
        ),
    )
    import_course(root)  # no grading data: the queued submission is graded by hand below
    lab = Course.objects.get(slug="lab")
    lab.enroll(alice)
    client.force_login(alice)
    url = reverse("assessment_submit", args=["lab", "kod", "attn"])
    with time_machine.travel(at("2026-12-08 23:58:30"), tick=False):
        client.post(url, {"code": "def attention(Q, K, V, mask=None):\n    return V\n", "mode": "submit"})
    [submission] = Submission.objects.filter(user=alice)
    assert submission.is_pending
    with time_machine.travel(at("2026-12-09 08:00"), tick=False):  # the queue was long
        Submission.objects.filter(pk=submission.pk).update(status="done", verdict="passed", score=1.0)
        item = score_of(Assessment.objects.get(slug="kod"), alice, "attn")
    assert (item.score, item.credit, item.late) == (1.0, 1.0, False)


def test_work_after_the_close_or_before_the_open_is_refused_and_not_stored(student, alice, homework):
    for moment in ("2026-12-11 00:00", "2026-11-30 12:00"):
        with time_machine.travel(at(moment), tick=False):
            page = post_answer(student, "first-choice", "a")
        assert page.status_code == 200
    assert not Attempt.objects.filter(user=alice).exists() and not HandIn.objects.exists()
    assert [str(m) for m in page.context["messages"]] == ["Bu değerlendirme henüz açılmadı."]


def test_closed_refusal_says_so_in_words(student, homework):
    with time_machine.travel(at("2026-12-11 00:00"), tick=False):
        page = post_answer(student, "first-choice", "a")
    assert page.status_code == 200
    assert [str(m) for m in page.context["messages"]] == [
        "Bu değerlendirme kapandı; artık çalışma teslim edilemez."
    ]


def test_item_not_in_the_students_pool_is_refused(student, alice, homework):
    [missing] = {"n1", "n2", "n3"} - set(drawn(homework, alice))
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        post_answer(student, missing, missing[1])
    assert not Attempt.objects.filter(user=alice).exists()


def test_pool_draws_are_per_student_and_stable(homework, make_user):
    users = [make_user(f"s{i}") for i in range(8)]
    first = [drawn(homework, u) for u in users]
    assert first == [drawn(homework, u) for u in users]
    assert len({tuple(d) for d in first}) > 1


def test_attempt_limit_of_the_assessment(student, alice, homework):
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        for _ in range(3):
            post_answer(student, "first-choice", "b")
    assert HandIn.objects.filter(user=alice).count() == 2
    assert Attempt.objects.filter(user=alice).count() == 2


def test_homework_with_a_password_asks_for_it_once(student, alice, homework):
    Assessment.objects.filter(pk=homework.pk).update(password="çay")
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        post_answer(student, "first-choice", "a")
        assert not Attempt.objects.exists()
        student.post(reverse("assessment_start", args=["mini", "odev"]), {"password": "kahve"})
        post_answer(student, "first-choice", "a")
        assert not Attempt.objects.exists()
        student.post(reverse("assessment_start", args=["mini", "odev"]), {"password": "çay"})
        post_answer(student, "first-choice", "a")
    assert score_of(homework, alice, "first-choice").score == 1.0


# -- overrides -----------------------------------------------------------------------------------


def test_extended_due_gives_full_credit_and_moves_the_late_windows(student, alice, homework, make_user):
    StudentOverride.objects.create(
        assessment=homework,
        user=alice,
        due=at("2026-12-10 23:59"),
        extra_attempts=1,
        set_by=make_user("hoca"),
    )
    windows = homework.windows_for(homework.override_for(alice))
    assert windows.closes == at("2026-12-12 23:59")
    assert windows.credit_at(at("2026-12-11 10:00")) == 0.8
    with time_machine.travel(at("2026-12-10 20:00"), tick=False):
        for _ in range(3):
            post_answer(student, "first-choice", "a")
    item = score_of(homework, alice, "first-choice")
    assert (item.score, item.credit, item.late, item.hand_ins) == (1.0, 1.0, False, 3)


# -- exams ---------------------------------------------------------------------------------------


def start(client, password="gizli"):
    return client.post(
        reverse("assessment_start", args=["mini", "sinav"]), {"password": password}, follow=True
    )


def test_wrong_password_starts_nothing_and_answers_are_refused(student, alice, exam):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        page = start(student, "yanlis")
        assert "parola" in page.text.lower() or "password" in page.text.lower()
        post_answer(student, "n1", "1", assessment="sinav")
    assert not AssessmentSession.objects.exists() and not Attempt.objects.exists()
    assert ExamLogEntry.objects.filter(event="refused").count() == 1


def test_exam_clock_is_the_servers_and_answers_after_it_are_refused(student, alice, exam):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
    session = AssessmentSession.objects.get(user=alice)
    assert session.deadline == at("2026-12-15 10:35")
    with time_machine.travel(at("2026-12-15 10:20"), tick=False):
        start(student)  # a reconnect resumes, it does not restart the clock
        page = student.get(reverse("assessment", args=["mini", "sinav"]))
        assert page.context["seconds_left"] == 15 * 60
        post_answer(student, "n1", "1", assessment="sinav")
        page = student.get(reverse("assessment", args=["mini", "sinav"]))
        # after_close: that it arrived, not whether it is right
        assert "Geri bildirim değerlendirme kapandıktan sonra gösterilir." in page.text
        assert "Puan: 1 üzerinden" not in page.text
        assert AssessmentSession.objects.get(user=alice).deadline == session.deadline
    with time_machine.travel(at("2026-12-15 10:35:01"), tick=False):
        post_answer(student, "n2", "2", assessment="sinav")
    assert list(Attempt.objects.filter(user=alice).values_list("question__slug", flat=True)) == ["n1"]
    assert score_of(exam, alice, "n1").score == 1.0
    with time_machine.travel(at("2026-12-15 12:01"), tick=False):  # closed: the feedback shows
        assert "Puan: 1 üzerinden 1." in student.get(reverse("assessment", args=["mini", "sinav"])).text


def test_extra_time_stretches_the_exam_but_not_past_its_close(student, alice, exam, make_user):
    StudentOverride.objects.create(assessment=exam, user=alice, time_factor=1.5, set_by=make_user("hoca"))
    with time_machine.travel(at("2026-12-15 10:00"), tick=False):
        start(student)
    assert AssessmentSession.objects.get(user=alice).deadline == at("2026-12-15 10:45")
    AssessmentSession.objects.all().delete()
    with time_machine.travel(at("2026-12-15 11:50"), tick=False):
        start(student)
    assert AssessmentSession.objects.get(user=alice).deadline == at("2026-12-15 12:00")


def test_handed_in_exam_refuses_later_answers(student, alice, exam):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
        student.post(reverse("assessment_finish", args=["mini", "sinav"]))
        post_answer(student, "n1", "1", assessment="sinav")
    assert not Attempt.objects.exists()
    assert list(ExamLogEntry.objects.values_list("event", flat=True)) == ["started", "submitted", "refused"]


@pytest.mark.queue
@pytest.mark.django_db(transaction=True)
def test_two_posts_at_once_at_the_deadline_store_one_answer(course_dir, make_user):
    write(
        course_dir,
        "tek.toml",
        HOMEWORK.replace('"odev"', '"tek"').replace("max_attempts = 2", "max_attempts = 1"),
    )
    import_course(course_dir)
    course = Course.objects.get(slug="mini")
    alice = make_user("alice")
    course.enroll(alice)
    clients = [Client(), Client()]
    for client in clients:
        client.force_login(alice)
    ready, pages = threading.Barrier(2), []

    def post(client):
        ready.wait()
        try:
            pages.append(post_answer(client, "first-choice", "a", assessment="tek"))
        finally:
            connection.close()

    with time_machine.travel(at("2026-12-08 23:59"), tick=False):
        threads = [threading.Thread(target=post, args=(c,)) for c in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(p.status_code for p in pages) == [200, 200]
    assert Attempt.objects.count() == 1 and HandIn.objects.count() == 1
    tek = Assessment.objects.get(slug="tek")
    assert score_of(tek, alice, "first-choice").score == 1.0


# -- contract and pages --------------------------------------------------------------------------


def test_assessment_scores_json_contract(student, alice, bob, homework, course, capsys, make_user):
    course.enroll(bob)
    with time_machine.travel(at("2026-12-09 10:00"), tick=False):
        post_answer(student, "first-choice", "a")
    pool = drawn(homework, alice)[1:]
    ManualScore.change(homework, alice, pool[0], 1.5, "Yöntem doğru, işaret hatası.", by=make_user("hoca"))
    call_command("assessment_scores", "mini", "odev", "--json")
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "assessment": "odev",
        "students": [
            {
                "username": "alice",
                "total": 2.3,
                "items": [
                    {"item": "first-choice", "score": 0.8, "credit": 0.8, "late": True, "manual": False},
                    {"item": pool[0], "score": 1.5, "credit": None, "late": False, "manual": True},
                    {"item": pool[1], "score": 0.0, "credit": None, "late": False, "manual": False},
                ],
            },
            {
                "username": "bob",
                "total": 0.0,
                "items": [
                    {"item": i, "score": 0.0, "credit": None, "late": False, "manual": False}
                    for i in drawn(homework, bob)
                ],
            },
        ],
    }


def test_course_page_lists_assessments_with_their_state_in_istanbul_time(student, homework):
    with time_machine.travel(at("2026-12-09 12:00"), tick=False):
        page = student.get(reverse("course", args=["mini"])).text
    assert "Ödev" in page and "%80" in page.replace(" ", "").replace("80%", "%80")
    assert "10 Aralık 2026 23:59" in page  # closes, Istanbul time (20:59 UTC)
    with time_machine.travel(at("2026-12-01 08:00"), tick=False):
        assert "1 Aralık 2026 09:00" in student.get(reverse("course", args=["mini"])).text


def test_assessment_page_lists_the_students_items(student, alice, homework):
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        page = student.get(reverse("assessment", args=["mini", "odev"])).text
    assert "9 Aralık 2026 23:59: puanın %80 kadarı" in page  # the late windows, in Turkish order
    for slug in ["first-choice", *drawn(homework, alice)]:
        assert f'id="item-{slug}"' in page
    [missing] = {"n1", "n2", "n3"} - set(drawn(homework, alice))
    assert f'id="item-{missing}"' not in page


# -- instructors ---------------------------------------------------------------------------------


@pytest.fixture
def teacher(client, course, make_user):
    hoca = make_user("hoca")
    course.instructors.add(hoca)
    client.force_login(hoca)
    return client


def test_manual_score_needs_a_comment_keeps_its_history_and_the_student_sees_it(
    teacher, alice, homework, course
):
    course.enroll(alice)
    url = reverse("assessment_manual_score", args=["mini", "odev", alice.pk])
    teacher.post(url, {"item": "first-choice", "points": "0,5", "comment": ""})
    assert not ManualScore.objects.exists()
    teacher.post(url, {"item": "first-choice", "points": "0,5", "comment": "Kısmen doğru."})
    teacher.post(url, {"item": "first-choice", "points": "1", "comment": "Yeniden baktım: doğru."})
    page = teacher.get(reverse("assessment_student", args=["mini", "odev", alice.pk])).text
    assert "— → 0,5 · Kısmen doğru." in page and "0,5 → 1,0 · Yeniden baktım: doğru." in page
    student = Client()
    student.force_login(alice)
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        page = student.get(reverse("assessment", args=["mini", "odev"])).text
    assert "Yeniden baktım: doğru." in page


def test_override_form_and_gradebook_csv(teacher, alice, homework, course):
    course.enroll(alice)
    teacher.post(
        reverse("assessment_override", args=["mini", "odev", alice.pk]),
        {"due": "2026-12-12T23:59", "closes": "", "time_factor": "1", "extra_attempts": "1", "note": "Rapor"},
    )
    override = StudentOverride.objects.get(user=alice)
    assert override.due == at("2026-12-12 23:59") and override.set_by.username == "hoca"
    student = Client()
    student.force_login(alice)
    with time_machine.travel(at("2026-12-12 20:00"), tick=False):
        post_answer(student, "first-choice", "a")
    page = teacher.get(reverse("assessment_gradebook", args=["mini", "odev"])).text
    assert ">alice</a>" in page and "hoca" in page
    csv_text = teacher.get(reverse("assessment_gradebook_csv", args=["mini", "odev"])).content.decode(
        "utf-8-sig"
    )
    header, row = csv_text.splitlines()[:2]
    assert header.startswith(("kullanıcı adı,", "username,"))
    assert row.startswith("alice,1.00,1.00,1.00,0,0")


def test_instructor_pages_are_a_404_for_students(student, homework):
    assert student.get(reverse("assessment_gradebook", args=["mini", "odev"])).status_code == 404
    assert student.get(reverse("assessment_gradebook_csv", args=["mini", "odev"])).status_code == 404


def test_a_student_with_hand_ins_can_still_be_deleted_but_a_handed_in_attempt_cannot(
    student, alice, homework
):
    from django.db.models import RestrictedError

    from assessments.models import HandIn
    from courses.models import Attempt

    with time_machine.travel(at("2026-12-08 23:58"), tick=False):
        post_answer(student, "first-choice", "a")
    assert HandIn.objects.filter(user=alice).exists()
    with pytest.raises(RestrictedError):
        Attempt.objects.filter(user=alice).delete()  # alone: it is handed in
    alice.delete()  # erasure of an account: its hand-ins go with it
    assert not HandIn.objects.filter(user_id=alice.pk).exists()


def _lesson_answer(client, slug: str, value):
    return client.post(
        reverse("answer_question", args=["mini", "second", slug]),
        {"value": value},
        HTTP_X_REQUESTED_WITH="dikkat",
    )


def test_an_open_exams_items_cannot_be_answered_or_revealed_on_their_lesson_page(student, alice, exam):
    from courses.models import Attempt

    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        response = _lesson_answer(student, "n2", "5")
        assert response.status_code == 403 and "Sınav" in response.text and "yanlış" not in response.text
        reveal = student.post(
            reverse("reveal_question", args=["mini", "second", "n2"]),
            {"confirm": "1"},
            HTTP_X_REQUESTED_WITH="dikkat",
        )
        assert reveal.status_code == 403
    assert not Attempt.objects.filter(user=alice).exists()
    with time_machine.travel(at("2026-12-15 12:30"), tick=False):  # closed: practice again
        assert _lesson_answer(student, "n2", "5").status_code == 200
    assert Attempt.objects.filter(user=alice).count() == 1


def _box(page: str, slug: str) -> str:
    """The words of one question's box on the lesson page."""
    box = re.search(rf'id="q-{slug}".*?</article>', page, re.S)
    assert box is not None
    return " ".join(re.sub(r"<[^>]+>", " ", box.group()).split())


def test_an_exams_answers_show_on_their_lesson_page_only_once_its_feedback_is_out(student, alice, exam):
    """An after_close exam keeps its feedback back: a second tab with the lesson, İlerlemem and
    the answer's status poll say nothing of whether the exam answer was right until it closes."""
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
        post_answer(student, "n1", "7", assessment="sinav")  # wrong
        [answer] = Attempt.objects.filter(user=alice)
        lesson = student.get(reverse("lesson", args=["mini", "second"])).text
        box = _box(lesson, "n1")
        assert "✗" not in box and "yanlış" not in box.lower() and "Henüz değil" not in box
        progress = student.get(reverse("dashboard")).text
        assert "yanlış" not in progress.lower()
        status = student.get(reverse("attempt_status", args=[answer.pk])).json()
        assert status == {"status": "done"}  # no fragment with the feedback
    with time_machine.travel(at("2026-12-15 12:30"), tick=False):  # closed: the feedback is out
        lesson = student.get(reverse("lesson", args=["mini", "second"])).text
        assert "✗" in _box(lesson, "n1") or "yanlış" in _box(lesson, "n1").lower()


# -- İlerlemem (the student dashboard) -------------------------------------------------------------


def dashboard_text(client) -> str:
    """The text of İlerlemem's assessments section."""
    html = client.get(reverse("dashboard")).text
    section = re.search(r'<section class="[^"]*progress-assessments.*?</section>', html, re.S)
    assert section is not None
    return " ".join(re.sub(r"<[^>]+>", " ", section.group()).split())


def test_dashboard_shows_what_is_due_next_and_the_scores_so_far(student, alice, homework, exam):
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        post_answer(student, "first-choice", "a")
        page = dashboard_text(student)
    # The homework, open, first (due nearest); its date in Istanbul time; the exam opens later.
    assert "Ödev ödev · Mini" in page and "Teslime 3 gün, 11 saat var (8 Aralık 2026 23:59)." in page
    assert "Sınav sınav · Mini" in page and "15 Aralık 2026 10:00 tarihinde açılır." in page
    assert page.index("Ödev ödev") < page.index("Sınav sınav")
    assert "5 üzerinden 1 puan" in page  # first-choice right (1 point); the two pool items (2 each) not yet
    with time_machine.travel(at("2026-12-09 12:00"), tick=False):
        page = dashboard_text(student)
    assert "Geç teslim: 10 Aralık 2026 23:59 tarihine kadar puanın %80 kadarı sayılır." in page


def test_dashboard_keeps_an_after_close_exams_scores_back_until_it_closes(student, alice, exam):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
        post_answer(student, "n1", "1", assessment="sinav")
        page = dashboard_text(student)
        assert "Sınav sürüyor: 30 dakika kaldı (bitiş 10:35)." in page
        student.post(reverse("assessment_finish", args=["mini", "sinav"]))
        page = dashboard_text(student)
    assert "Sınav teslim edildi." in page and "1 öğe alındı; puanlar kapanıştan sonra" in page
    assert "üzerinden" not in page
    with time_machine.travel(at("2026-12-15 12:01"), tick=False):
        page = dashboard_text(student)
    assert "2 üzerinden 1 puan" in page


# -- gradebook cost; exams that end on the server ------------------------------------------------


def test_gradebook_costs_the_same_queries_for_few_or_many_students_and_writes_nothing(
    teacher, course, homework, make_user
):
    from django.test.utils import CaptureQueriesContext

    from assessments.models import PoolDraw

    def gradebook_queries(students: int) -> list[str]:
        for i in range(students):
            course.enroll(make_user(f"ogr{students}-{i}"))
        with CaptureQueriesContext(connection) as queries:
            page = teacher.get(reverse("assessment_gradebook", args=["mini", "odev"]))
        assert page.status_code == 200
        return [q["sql"] for q in queries.captured_queries]

    few = gradebook_queries(2)
    many = gradebook_queries(10)  # 12 students now
    assert len(many) == len(few)
    assert not [sql for sql in few + many if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert not PoolDraw.objects.exists()


def test_the_draw_shown_before_any_hand_in_is_the_one_kept(student, alice, homework):
    from assessments.models import PoolDraw

    shown = drawn(homework, alice)
    assert not PoolDraw.objects.exists()  # reading draws stores nothing
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        post_answer(student, "first-choice", "a")
    assert PoolDraw.objects.get(user=alice).draws and drawn(homework, alice) == shown


@pytest.mark.queue
@pytest.mark.django_db(transaction=True)
def test_an_exam_is_handed_in_by_the_server_when_its_time_is_over(student, alice, exam, run_queue):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
        post_answer(student, "n1", "1", assessment="sinav")
    with time_machine.travel(at("2026-12-15 10:34:59"), tick=False):
        run_queue()  # not yet: the task waits for the deadline
    assert AssessmentSession.objects.get(user=alice).submitted_at is None
    with time_machine.travel(at("2026-12-15 10:35:02"), tick=False):
        run_queue()  # the student never came back
    assert AssessmentSession.objects.get(user=alice).submitted_at == at("2026-12-15 10:35")
    entry = ExamLogEntry.objects.get(event="time_up")
    assert entry.at == at("2026-12-15 10:35") and entry.get_event_display() == "teslim edildi: süre doldu"
    with time_machine.travel(at("2026-12-15 10:40"), tick=False):
        page = post_answer(student, "n2", "2", assessment="sinav")
        assert "Bu sınavı teslim ettiniz; cevaplar artık değiştirilemez." in page.text
        page = student.get(reverse("assessment", args=["mini", "sinav"])).text
    assert "Sınavınız 15 Aralık 2026 10:35:00 itibarıyla teslim edildi" in page
    assert 'name="assessment"' not in page  # no answer forms
    assert list(Attempt.objects.values_list("question__slug", flat=True)) == ["n1"]


@pytest.mark.queue
@pytest.mark.django_db(transaction=True)
def test_extra_time_given_during_an_exam_keeps_it_open_past_the_first_deadline(
    student, alice, exam, run_queue, make_user
):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
        override = StudentOverride.objects.create(
            assessment=exam, user=alice, time_factor=1.5, set_by=make_user("hoca")
        )
        override.apply_to_session()
    with time_machine.travel(at("2026-12-15 10:36"), tick=False):
        run_queue()
        assert AssessmentSession.objects.get(user=alice).submitted_at is None
        post_answer(student, "n2", "2", assessment="sinav")
    with time_machine.travel(at("2026-12-15 10:51"), tick=False):
        run_queue()
    assert AssessmentSession.objects.get(user=alice).submitted_at == at("2026-12-15 10:50")
    assert list(ExamLogEntry.objects.values_list("event", flat=True)) == [
        "started",
        "extended",
        "saved",
        "time_up",
    ]


def test_the_pages_clock_hands_in_at_zero_and_says_the_time_is_up(student, alice, exam):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
    with time_machine.travel(at("2026-12-15 10:35:01"), tick=False):
        page = student.post(reverse("assessment_finish", args=["mini", "sinav"]), follow=True).text
    assert "Süre doldu: sınavınız kaydettiğiniz cevaplarla teslim edildi." in page
    assert AssessmentSession.objects.get(user=alice).submitted_at == at("2026-12-15 10:35")


# -- the feedback policy outside the assessment's page -------------------------------------------


@pytest.mark.parametrize(
    ("feedback", "shown", "hidden"),
    [
        ("after_close", "geri bildirimi değerlendirme kapandıktan sonra gösterilir.", ["%50", "geçmiyor"]),
        ("score_only", "Puan: %50. 1 durum henüz geçmiyor.", ["wrong-case-name"]),
    ],
)
def test_status_poll_and_history_of_handed_in_code_follow_the_feedback_policy(
    db, tmp_path, alice, client, feedback, shown, hidden
):
    root = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", root)
    write(
        root,
        "kod.toml",
        HOMEWORK.replace('"odev"', '"kod"')
        .replace(
            'items = ["first-choice", { pool = ["n1", "n2", "n3"], pick = 2, points = 2 }]',
            'items = ["attn"]',
        )
        .replace("max_attempts = 2", f'feedback = "{feedback}"'),
    )
    import_course(root)
    lab = Course.objects.get(slug="lab")
    lab.enroll(alice)
    client.force_login(alice)
    code = "def attention(Q, K, V, mask=None):\n    return V\n"
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        client.post(
            reverse("assessment_submit", args=["lab", "kod", "attn"]), {"code": code, "mode": "submit"}
        )
        [submission] = Submission.objects.filter(user=alice)
        tests = [
            {"name": "right-case-name", "passed": True},
            {"name": "wrong-case-name", "passed": False},
        ]
        Submission.objects.filter(pk=submission.pk).update(
            status="done", verdict="failed", score=0.5, tests=tests
        )
        status = client.get(reverse("submission_status", args=[submission.pk])).json()
        history = client.get(reverse("submission_history", args=["lab", "lab", "attn"])).text
        lesson = client.get(reverse("lesson", args=["lab", "lab"])).text
    assert "wrong-case-name" not in lesson and "right-case-name" not in lesson  # not the lesson's to show
    for html in (status["html"], history):
        text = " ".join(re.sub(r"<[^>]+>", " ", html).split())
        assert shown in text
        assert "wrong-case-name" not in text and "✗" not in text
        for word in hidden:
            assert word not in text
    assert (status["verdict"], status["score"]) == (
        (None, None) if feedback == "after_close" else ("failed", 0.5)
    )
    with time_machine.travel(at("2026-12-11 00:00"), tick=False):
        status = client.get(reverse("submission_status", args=[submission.pk])).json()
    # after_close: once closed everything shows; score_only never says which cases fail.
    assert ("wrong-case-name" in status["html"]) == (feedback == "after_close")


# -- password limit, Excel CSV, admin -------------------------------------------------------------


def test_guessing_an_exams_password_is_stopped_after_ten_wrong_ones(student, alice, exam):
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        for _ in range(10):
            page = start(student, "yanlis")
        assert "Parola doğru değil." in page.text
        page = start(student)  # the right one, but too late
        assert "Çok fazla yanlış parola denendi. 60 dakika sonra yeniden deneyin" in page.text
        assert not AssessmentSession.objects.exists()
    with time_machine.travel(at("2026-12-15 11:06"), tick=False):  # an hour later
        start(student)
    assert AssessmentSession.objects.filter(user=alice).exists()


def test_gradebook_csv_for_excel_has_semicolons_and_decimal_commas(teacher, alice, homework, course):
    course.enroll(alice)
    student = Client()
    student.force_login(alice)
    with time_machine.travel(at("2026-12-09 12:00"), tick=False):  # late: 80 %
        post_answer(student, "first-choice", "a")
    page = teacher.get(reverse("assessment_gradebook", args=["mini", "odev"])).text
    assert "CSV for Excel in Turkish" in page or "Türkçe Excel için CSV" in page
    response = teacher.get(reverse("assessment_gradebook_csv_excel", args=["mini", "odev"]))
    assert response["Content-Disposition"] == 'attachment; filename="mini-odev-excel.csv"'
    header, row = response.content.decode("utf-8-sig").splitlines()[:2]
    assert header.startswith("kullanıcı adı;toplam;first-choice;")
    assert row.startswith("alice;0,80;0,80;0,80;1;0")


def test_admin_lists_assessments_and_keeps_records_read_only(client, make_user, homework, exam, alice):
    admin_user = make_user("yonetici", is_staff=True, is_superuser=True)
    client.force_login(admin_user)
    ManualScore.change(homework, alice, "first-choice", 0.5, "Kısmen.", by=admin_user)
    for name in (
        "assessment",
        "studentoverride",
        "assessmentsession",
        "handin",
        "examlogentry",
        "manualscore",
    ):
        assert client.get(reverse(f"admin:assessments_{name}_changelist")).status_code == 200
    page = client.get(reverse("admin:assessments_assessment_change", args=[exam.pk])).text
    assert 'id="id_feedback_released"' in page and 'id="id_title"' not in page and "gizli" not in page
    change = reverse("admin:assessments_manualscore_change", args=[ManualScore.objects.get().pk])
    assert 'name="points"' not in client.get(change).text  # changed with a comment, on the student's page
    assert (
        client.post(
            reverse("admin:assessments_manualscore_delete", args=[ManualScore.objects.get().pk]),
            {"post": "yes"},
        ).status_code
        == 403
    )


def test_the_refresh_link_of_code_still_being_graded_reloads_the_assessment_not_the_lesson(
    db, tmp_path, alice, client
):
    root = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", root)
    write(
        root,
        "kod.toml",
        HOMEWORK.replace('"odev"', '"kod"').replace(
            'items = ["first-choice", { pool = ["n1", "n2", "n3"], pick = 2, points = 2 }]',
            'items = ["attn"]',
        ),
    )
    import_course(root)  # no grading data: the submission stays queued
    Course.objects.get(slug="lab").enroll(alice)
    client.force_login(alice)
    page_url = reverse("assessment", args=["lab", "kod"])
    with time_machine.travel(at("2026-12-08 12:00"), tick=False):
        client.post(
            reverse("assessment_submit", args=["lab", "kod", "attn"]),
            {"code": "def attention(Q, K, V, mask=None):\n    return V\n", "mode": "submit"},
        )
        [submission] = Submission.objects.filter(user=alice)
        page = client.get(page_url).content.decode()
    [href] = re.findall(r'<a href="([^"]*)" class="refresh-link"', page)
    # A link of only a query and a fragment stays on the page it is on: here the assessment.
    assert re.fullmatch(rf"\?t=\d+#sonuc-{submission.pk}", href)
    assert f'id="sonuc-{submission.pk}"' in page
