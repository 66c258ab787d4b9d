"""Nothing a student did is lost or mis-graded: grade history, protected student work, fill-in
blanks graded as one expression, capped code, paginated instructor pages, and previews that go
through the queue like everything else."""

import html
from pathlib import Path

import pytest
from django.db.models import ProtectedError
from django.urls import reverse

from courses.models import Lesson, LessonProgress, Question
from courses.selftest import submit_answer
from grader import regrade as regrades
from grader.grading import grade_claimed, submit
from grader.models import GradeChange, Submission
from jobs.sweeper import sweep

pytestmark = [pytest.mark.django_db(transaction=True)]

FIXTURES = Path(__file__).parent / "fixtures"
NO_SCALING = (FIXTURES / "lab" / "01-lab" / "attn" / "variants" / "no_scaling.py").read_text()


@pytest.fixture
def student(make_user, lab, quiz):
    user = make_user("ogrenci")
    lab.enroll(user)
    quiz.enroll(user)
    return user


def text_of(response) -> str:
    """What a person reads: entities decoded, no-break spaces as spaces."""
    return html.unescape(response.content.decode()).replace("\xa0", " ")


# --- Data is never lost ----------------------------------------------------------------------


@pytest.mark.sandbox
def test_applying_a_regrade_keeps_the_previous_message_and_misconception_in_the_history(
    client, teacher, student, lab
):
    attn = lab.exercises.get(slug="attn")
    submission = submit(student, attn, NO_SCALING).submission
    grade_claimed(submission.pk)
    submission.refresh_from_db()
    first_message = submission.rendered_message()
    assert first_message and submission.misconception == "no-scaling"

    regrade = regrades.start(attn, teacher)
    # The preview's worker graded it again (the reference changed): it passes now.
    regrade.items.update(
        status="done",
        new_verdict="passed",
        new_score=1.0,
        new_tests=[],
        new_message={"msgid": "All %(count)s cases passed.", "params": {"count": 3}},
        new_misconception="",
    )
    assert regrades.apply(regrade) == 1

    first, applied = GradeChange.objects.filter(submission=submission)
    assert (first.verdict, first.misconception, first.rendered_message()) == (
        "failed",
        "no-scaling",
        first_message,
    )
    assert (applied.verdict, applied.misconception) == ("passed", "")
    client.force_login(teacher)
    page = text_of(client.get(reverse("instructors:submissions", args=["lab", "attn", student.pk])))
    earlier = page[page.index("Önceki notlar") :]
    assert first_message in earlier and "no-scaling" in earlier


def admin_client(client, make_user):
    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))
    return client


RETIRE_ADVICE = "emekliye ayırın"


def test_deleting_a_question_lesson_or_course_with_answers_is_refused_and_says_to_retire(
    client, make_user, student, quiz
):
    question = Question.objects.get(course=quiz, slug="who-attends")
    submit_answer(student, question, {"option": "qk"})
    with pytest.raises(ProtectedError):
        question.delete()
    admin = admin_client(client, make_user)
    for url in (
        reverse("admin:courses_question_delete", args=[question.pk]),
        reverse("admin:courses_lesson_delete", args=[question.lesson_id]),
        reverse("admin:courses_course_delete", args=[quiz.pk]),
    ):
        response = admin.post(url, {"post": "yes"})
        assert response.status_code == 200, url
        assert RETIRE_ADVICE in text_of(response), url
    bulk = admin.post(
        reverse("admin:courses_question_changelist"),
        {"action": "delete_selected", "_selected_action": [question.pk], "post": "yes"},
    )
    assert bulk.status_code == 200 and RETIRE_ADVICE in text_of(bulk)
    assert Question.objects.filter(pk=question.pk).exists() and student.attempts.count() == 1


def test_deleting_an_exercise_with_submissions_or_a_lesson_with_progress_is_refused(
    client, make_user, student, lab
):
    attn = lab.exercises.get(slug="attn")
    Submission.objects.create(
        user=student, exercise=attn, code="x = 1", code_hash="x", status="done", verdict="failed"
    )
    admin = admin_client(client, make_user)
    response = admin.post(reverse("admin:courses_exercise_delete", args=[attn.pk]), {"post": "yes"})
    assert response.status_code == 200 and RETIRE_ADVICE in text_of(response)
    assert Submission.objects.filter(exercise=attn).count() == 1

    other = Lesson.objects.create(course=lab, slug="okundu", title="Okundu")
    LessonProgress.record_visit(student, other)  # only read, never answered: still the student's
    response = admin.post(reverse("admin:courses_lesson_delete", args=[other.pk]), {"post": "yes"})
    assert response.status_code == 200 and RETIRE_ADVICE in text_of(response)
    assert "ogrenci · Okundu" in text_of(response)  # whose work it is
    assert LessonProgress.objects.filter(lesson=other).exists()


def test_content_nobody_worked_on_can_still_be_deleted(client, make_user, quiz):
    question = Question.objects.get(course=quiz, slug="who-attends")
    response = admin_client(client, make_user).post(
        reverse("admin:courses_question_delete", args=[question.pk]), {"post": "yes"}
    )
    assert response.status_code == 302
    assert not Question.objects.filter(pk=question.pk).exists()


def test_the_retired_box_says_to_retire_instead_of_deleting(client, make_user, quiz):
    question = Question.objects.get(course=quiz, slug="who-attends")
    page = text_of(
        admin_client(client, make_user).get(reverse("admin:courses_question_change", args=[question.pk]))
    )
    assert "silmek yerine emekliye ayırın" in page.casefold()


# --- The grader host: paginated instructor pages -------------------------------------------


def test_a_students_long_history_is_shown_twenty_submissions_a_page(client, teacher, student, lab):
    attn = lab.exercises.get(slug="attn")
    ids = [
        Submission.objects.create(
            user=student,
            exercise=attn,
            code=f"x = {number}\n",
            code_hash=str(number),
            status="done",
            verdict="failed",
            score=0.0,
        ).pk
        for number in range(25)
    ]
    client.force_login(teacher)
    url = reverse("instructors:submissions", args=["lab", "attn", student.pk])
    first = text_of(client.get(url))
    assert [f'id="sub-{pk}"' in first for pk in ids] == [False] * 5 + [True] * 20  # the newest 20
    assert "+x = 5" in first and "-x = 4" in first  # the page's oldest still shows its changes
    assert 'href="?page=2"' in first and "Sayfa 1 / 2" in first
    second = text_of(client.get(url, {"page": 2}))
    assert [f'id="sub-{pk}"' in second for pk in ids] == [True] * 5 + [False] * 20
    assert 'href="?page=1"' in second


# --- Code fill-in: a blank is one expression -------------------------------------------------


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "blank, correct",
    [
        ("K if False else K.T", True),  # as text: (Q @ K) if False else K.T, the wrong shape
        ("K.T if False else Q @ K.T", False),  # as text: Q @ K.T either way, though it is Q @ K.T itself
        ("K.T * 1  # devrik", True),  # a comment never swallows the closing parenthesis
    ],
)
def test_a_code_blank_is_graded_as_what_it_evaluates_to(quiz, blank, correct):
    from courses.selftest import grade_answer

    question = Question.objects.get(course=quiz, slug="score-fill")  # skor = Q @ ____
    assert grade_answer(question, {"blanks": [blank]})[1].correct is correct


def test_a_code_blank_where_no_expression_can_stand_is_an_authoring_problem():
    from courses.kinds import SpecProblem, get_kind

    data = {
        "code": "y = np.____(K)",
        "blanks": [{"answer": "transpose"}],
        "check": ["y"],
        "cases": [{"name": "a", "inputs": {"K": [[1.0, 2.0]]}}],
    }
    with pytest.raises(SpecProblem, match="expression"):
        get_kind("fill_in").validate(data, lambda text, keys: text)
    data["code"] = "y = np.transpose(____)"
    data["blanks"] = [{"answer": "K"}]
    assert get_kind("fill_in").validate(data, lambda text, keys: text)["grader"]


# --- The grader host: stored code is capped --------------------------------------------------


@pytest.mark.parametrize("size, said", [(2 * 1024 * 1024, "2,0 MB"), (100 * 1024, "100,0 KB")])
def test_code_over_the_limit_is_refused_with_its_size_and_never_stored(client, student, lab, size, said):
    client.force_login(student)
    url = reverse("submit_code", args=["lab", "lab", "attn"])
    code = "x = 1\n" + "#" * (size - 6)
    response = client.post(url, {"code": code, "mode": "submit"}, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 413
    error = response.json()["error"].replace("\xa0", " ")
    assert said in error and "64,0 KB" in error
    page = text_of(client.post(url, {"code": code, "mode": "submit"}, follow=True))  # without JavaScript
    assert said in page and "64,0 KB" in page and "Kaydedilmedi" in page
    assert not Submission.objects.exists()


def test_a_fill_in_blank_over_the_limit_is_refused_with_its_size_and_never_stored(client, student, quiz):
    from courses.models import Attempt

    client.force_login(student)
    url = reverse("answer_question", args=["quiz", "selftest", "score-fill"])
    response = client.post(url, {"blank-0": "K" * 2_000_000}, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 400
    assert "1. boşluk 2.000.000 karakter uzunluğunda; sınır 200 karakter" in text_of(response)
    assert not Attempt.objects.exists()


# --- The grader host: no sandbox runs in a web request ---------------------------------------


def preview_url(slug="score-fill"):
    return reverse("answer_question", args=["quiz", "selftest", slug])


@pytest.mark.sandbox
@pytest.mark.queue
def test_an_instructors_preview_of_code_blanks_is_checked_by_a_worker_and_never_counted(
    client, teacher, quiz, run_queue
):
    from unittest import mock

    from courses.models import Attempt
    from instructors import stats

    quiz.enroll(teacher)  # even an instructor who is also enrolled
    client.force_login(teacher)
    with mock.patch("courses.kinds.fill_in.FillIn._grade_code") as run:
        fragment = client.post(
            preview_url(), {"blank-0": "K.T", "preview": "1"}, HTTP_X_REQUESTED_WITH="dikkat"
        ).text
    run.assert_not_called()  # nothing ran in the request
    assert "data-attempt-pending" in fragment
    status_url = html.unescape(fragment.split('data-status-url="', 1)[1].split('"', 1)[0])
    assert client.get(status_url).json() == {"status": "queued"}  # polled like a student's answer

    run_queue()
    data = client.get(status_url).json()
    assert data["status"] == "done" and "data-attempt-pending" not in data["html"]
    assert "Önizleme (kaydedilmedi): Doğru." in html.unescape(data["html"])
    assert 'name="preview" value="1"' in data["html"]  # the next try is a preview again

    question = Question.objects.get(course=quiz, slug="score-fill")
    assert not Attempt.objects.exists()
    row = next(r for r in stats.gradebook(quiz, stats.course_items(quiz)) if r.user == teacher)
    assert row.cells["q:score-fill"].score is None and row.total == 0
    assert stats.question_stats(question)[0].students == 0


def test_without_javascript_a_preview_shows_checking_then_its_result_on_the_preview_page(
    client, teacher, quiz
):
    from courses.models import AnswerPreview

    client.force_login(teacher)
    response = client.post(preview_url(), {"blank-0": "K", "preview": "1"})
    preview = AnswerPreview.objects.get()
    assert (
        response.url
        == reverse("instructors:preview", args=["quiz", "selftest"]) + f"?onizleme={preview.pk}#q-score-fill"
    )
    page = text_of(client.get(response.url))
    assert "Öğrenci önizlemesi" in page and "data-attempt-pending" in page
    assert '<meta http-equiv="refresh"' in page  # reloads itself until checked
    AnswerPreview.objects.filter(pk=preview.pk).update(  # as a worker grades it
        status="done",
        score=0.0,
        correct=False,
        feedback=[
            {"blank": 0, "text": "K", "correct": False, "message": None, "hint_html": "Boyutlara bakın."}
        ],
    )
    page = text_of(client.get(response.url))
    assert (
        "data-attempt-pending" not in page
        and "Boyutlara bakın." in page
        and "Önizleme (kaydedilmedi)" in page
    )


def test_a_preview_whose_worker_was_lost_is_queued_again(client, teacher, quiz):
    from datetime import timedelta

    from django.utils import timezone

    from courses import answer_queue
    from courses.models import AnswerPreview

    client.force_login(teacher)
    client.post(preview_url(), {"blank-0": "K.T", "preview": "1"}, HTTP_X_REQUESTED_WITH="dikkat")
    preview = AnswerPreview.objects.get()
    assert answer_queue.claim(preview.pk, preview=True) is not None  # a worker takes it, then dies
    AnswerPreview.objects.filter(pk=preview.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert sweep() == {"courses.AnswerPreview": (1, 0)}
    preview.refresh_from_db()
    assert preview.status == "queued"


def test_an_instructors_previews_never_stop_a_question_from_being_deleted(client, make_user, teacher, quiz):
    client.force_login(teacher)
    client.post(preview_url("who-attends"), {"option": "qk", "preview": "1"})
    question = Question.objects.get(course=quiz, slug="who-attends")
    response = admin_client(client, make_user).post(
        reverse("admin:courses_question_delete", args=[question.pk]), {"post": "yes"}
    )
    assert response.status_code == 302 and not Question.objects.filter(pk=question.pk).exists()
