"""Instructor tools: who may see them, what the gradebook and CSV say, regrade previews."""

import csv
import io
import shutil
from pathlib import Path
from unittest import mock

import pytest
from django.urls import reverse

from courses.models import Attempt, Question
from courses.selftest import submit_answer
from grader.grading import grade_claimed, submit
from grader.models import GradeChange, ItemCheck, Regrade, Submission

pytestmark = [pytest.mark.django_db(transaction=True)]

FIXTURES = Path(__file__).parent / "fixtures"
SOLUTION = (FIXTURES / "lab" / "01-lab" / "attn" / "solution.py").read_text()
NO_SCALING = (FIXTURES / "lab" / "01-lab" / "attn" / "variants" / "no_scaling.py").read_text()


def instructor_urls(course_slug, exercise="attn", question=None, user_id=1, regrade_id=1):
    urls = [
        reverse("instructors:dashboard", args=[course_slug]),
        reverse("instructors:gradebook", args=[course_slug]),
        reverse("instructors:gradebook_csv", args=[course_slug]),
        reverse("instructors:item", args=[course_slug, "e", exercise]),
        reverse("instructors:submissions", args=[course_slug, exercise, user_id]),
        reverse("instructors:test_item", args=[course_slug, exercise]),
        reverse("instructors:regrade", args=[course_slug, regrade_id]),
        reverse("instructors:preview", args=[course_slug, "lab"]),
    ]
    return urls


def test_students_cannot_reach_any_instructor_page(client, alice, lab):
    lab.enroll(alice)
    client.force_login(alice)
    for url in instructor_urls("lab", user_id=alice.pk):
        assert client.get(url).status_code == 404, url
    response = client.post(reverse("instructors:regrade_start", args=["lab", "attn"]))
    assert response.status_code == 404
    assert not Regrade.objects.exists()


def test_instructor_of_one_course_cannot_see_another(client, make_user, lab, quiz):
    other = make_user("baska-hoca")
    quiz.instructors.add(other)
    client.force_login(other)
    for url in instructor_urls("lab"):
        assert client.get(url).status_code == 404, url
    assert client.get(reverse("instructors:dashboard", args=["quiz"])).status_code == 200


def test_anonymous_users_are_sent_to_log_in(client, lab):
    response = client.get(reverse("instructors:gradebook", args=["lab"]))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_a_student_cannot_open_another_students_history_or_status(client, alice, bob, lab):
    lab.enroll(alice)
    lab.enroll(bob)
    theirs = submit(bob, lab.exercises.get(slug="attn"), SOLUTION).submission
    client.force_login(alice)
    assert client.get(reverse("submission_status", args=[theirs.pk])).status_code == 404
    history = client.get(reverse("submission_history", args=["lab", "lab", "attn"])).text
    assert f"#{theirs.pk}" not in history


@pytest.mark.sandbox
def test_gradebook_and_csv_show_scores_attempts_and_turkish_names(client, teacher, make_user, lab):
    ayse = make_user("ayşe")
    lab.enroll(ayse)
    attn = lab.exercises.get(slug="attn")
    for code in (NO_SCALING, SOLUTION):
        grade_claimed(submit(ayse, attn, code).submission.pk)
    client.force_login(teacher)
    page = client.get(reverse("instructors:gradebook", args=["lab"])).text
    assert "ayşe" in page and "1,00" in page and "2×" in page
    response = client.get(reverse("instructors:gradebook_csv", args=["lab"]))
    body = response.getvalue()  # streamed
    assert body.startswith("\ufeff".encode())
    rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    header, first = rows[0], rows[1]
    assert header[:5] == ["kullanıcı adı", "e-posta", "kayıt tarihi", "son etkinlik", "toplam"]
    assert header[5:] == ["slow", "attn"]
    assert first[0] == "ayşe" and first[4] == "1.00" and first[5:] == ["", "1.00"]
    assert len(rows) == 2  # one row per student


def test_gradebook_sorts_and_filters(client, teacher, make_user, quiz):
    zeynep, can = make_user("zeynep"), make_user("can")
    for user in (zeynep, can):
        quiz.enroll(user)
    question = Question.objects.get(course=quiz, slug="who-attends")
    submit_answer(zeynep, question, {"option": "qk"})
    client.force_login(teacher)
    url = reverse("instructors:gradebook", args=["quiz"])
    by_total = client.get(url, {"sort": "total", "desc": "1"}).text
    assert by_total.index("zeynep") < by_total.index(">can<")
    by_name = client.get(url, {"sort": "name"}).text
    assert by_name.index(">can<") < by_name.index("zeynep")
    only_z = client.get(url, {"q": "zey"}).text
    assert "zeynep" in only_z and ">can<" not in only_z


def test_item_statistics_count_choices_and_misconceptions(client, teacher, make_user, quiz):
    question = Question.objects.get(course=quiz, slug="who-attends")
    for name, answers in (("a1", ["qv", "qk"]), ("a2", ["qk"]), ("a3", ["qv"])):
        user = make_user(name)
        quiz.enroll(user)
        for option in answers:
            submit_answer(user, question, {"option": option})
    client.force_login(teacher)
    page = client.get(reverse("instructors:item", args=["quiz", "q", "who-attends"])).text
    assert "value-in-score" in page
    assert sum("value-in-score" in a.misconceptions for a in Attempt.objects.all()) == 2
    # 3 students tried; 1 right at first; 2 of 3 eventually.
    assert "%33" in page or "33%" in page
    assert "%67" in page or "67%" in page


@pytest.mark.sandbox
def test_regrade_preview_shows_who_goes_up_and_down_then_applies_with_history(
    client, teacher, make_user, lab, tmp_path, run_queue, settings
):
    """The reference changes (the lab now expects unscaled scores): a student with the old
    right answer goes down, one who forgot scaling goes up; nothing changes until applied."""
    from courses.exercises import check_exercises
    from courses.importer import import_course

    up, down = make_user("yukari"), make_user("asagi")
    attn = lab.exercises.get(slug="attn")
    for user, code in ((up, NO_SCALING), (down, SOLUTION)):
        lab.enroll(user)
        grade_claimed(submit(user, attn, code).submission.pk)
    course_dir = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", course_dir)
    exercise_dir = course_dir / "01-lab" / "attn"
    (exercise_dir / "solution.py").write_text(NO_SCALING)
    toml = (exercise_dir / "exercise.toml").read_text()
    # The old solution's mistake is the new reference, so its catalog entry goes too.
    toml = "\n".join(
        line
        for line in toml.splitlines()
        if not line.startswith(("[[misconceptions]]", "tag =", "file =", "hint ="))
    )
    (exercise_dir / "exercise.toml").write_text(toml)
    report = import_course(course_dir, prepare_exercises=lambda s: check_exercises(s, build=True))
    assert any(line.startswith("~ exercise attn") for line in report.changes)
    attn.refresh_from_db()

    client.force_login(teacher)
    page = client.get(reverse("instructors:item", args=["lab", "e", "attn"])).text
    assert "2 gönderim" in page  # graded against an older version
    response = client.post(reverse("instructors:regrade_start", args=["lab", "attn"]))
    regrade = Regrade.objects.get()
    assert response.url == reverse("instructors:regrade", args=["lab", regrade.pk])
    run_queue()
    preview = client.get(response.url).text
    assert "↑ 1" in preview and "↓ 1" in preview
    assert "+1,00" in preview and "-1,00" in preview
    # Nothing changed yet.
    assert Submission.objects.get(user=down).score == 1.0
    client.post(response.url, {"action": "apply"})
    assert Submission.objects.get(user=down).score == 0.0
    assert Submission.objects.get(user=up).score == 1.0
    history = list(GradeChange.objects.filter(submission__user=down).values_list("score", flat=True))
    assert history == [1.0, 0.0]


@pytest.mark.sandbox
def test_an_interrupted_regrade_loses_nothing_and_resumes(client, teacher, make_user, lab):
    student = make_user("ogr")
    lab.enroll(student)
    attn = lab.exercises.get(slug="attn")
    grade_claimed(submit(student, attn, SOLUTION).submission.pk)
    from grader import regrade as regrades

    regrade = regrades.start(attn, teacher)
    # No worker ran (as if they all died): applying is refused, the old grade stands.
    with pytest.raises(regrades.NotReady):
        regrades.apply(regrade)
    assert Submission.objects.get(user=student).score == 1.0
    client.force_login(teacher)
    client.post(reverse("instructors:regrade", args=["lab", regrade.pk]), {"action": "resume"})
    for item in regrade.items.all():
        regrades.grade_item(item.pk)
    assert regrades.apply(regrade) == 1


@pytest.mark.sandbox
@pytest.mark.queue
def test_test_this_item_grades_reference_and_variants_through_the_queue(client, teacher, lab, run_queue):
    client.force_login(teacher)
    url = reverse("instructors:test_item", args=["lab", "attn"])
    assert "henüz denetim" in client.get(url).text  # no check yet
    with mock.patch("grader.itemcheck.grade") as grade:
        client.post(url)
        client.post(url)  # a second press while the first waits starts nothing new
    grade.assert_not_called()  # nothing runs in the web request
    assert ItemCheck.objects.count() == 1
    assert "bekleniyor" in client.get(url).text
    run_queue()
    page = client.get(url).text
    assert "geçti" in page and "no-scaling" in page and "geçmedi" in page  # verdicts in words


def test_a_check_without_grading_data_says_so(client, teacher, lab, run_queue, settings, tmp_path):
    settings.GRADER_DATA_DIR = tmp_path  # this machine has no grading data
    client.force_login(teacher)
    url = reverse("instructors:test_item", args=["lab", "attn"])
    client.post(url)
    run_queue()
    assert "notlandırma verisi yok" in client.get(url).text


def test_preview_as_student_records_nothing(client, teacher, quiz):
    quiz.enroll(teacher)  # even an instructor who is also enrolled
    client.force_login(teacher)
    page = client.get(reverse("instructors:preview", args=["quiz", "selftest"])).text
    assert "Öğrenci önizlemesi" in page and 'name="preview" value="1"' in page
    client.post(
        reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qk", "preview": "1"}
    )
    assert not Attempt.objects.exists()


def test_csv_does_not_let_a_username_run_as_a_spreadsheet_formula(client, teacher, make_user, lab):
    lab.enroll(make_user("=HYPERLINK(1)"))
    client.force_login(teacher)
    body = client.get(reverse("instructors:gradebook_csv", args=["lab"])).getvalue().decode("utf-8-sig")
    assert list(csv.reader(io.StringIO(body)))[1][0] == "'=HYPERLINK(1)"


def test_previews_of_code_blanks_are_limited_like_students_answers(client, teacher, quiz, settings):
    from courses.models import AnswerPreview

    settings.ANSWER_RATE_LIMIT = 2
    client.force_login(teacher)  # an instructor, not enrolled: previews are queued, never recorded
    url = reverse("answer_question", args=["quiz", "selftest", "score-fill"])

    def preview():
        return client.post(url, {"blank-0": "K.T", "preview": "1"}, HTTP_X_REQUESTED_WITH="dikkat").text

    with mock.patch("courses.kinds.fill_in.FillIn._grade_code") as run:
        assert "data-attempt-pending" in preview()
        assert "hâlâ kontrol ediliyor" in preview()  # one waiting at a time, as for a student
        AnswerPreview.objects.update(status="done")  # a worker graded it
        assert "data-attempt-pending" in preview()
        AnswerPreview.objects.update(status="done")
        page = preview()
    run.assert_not_called()  # nothing ran in the request
    assert "Çok hızlı" in page
    assert AnswerPreview.objects.count() == 2 and not Attempt.objects.exists()
