"""Student work across a publish from the authoring area: editing an item's text keeps its
attempts and their grades; changing its answers keeps them too, and the publish page says how
many would change and offers the regrade (an exercise's: the instructors' regrade tool; a
question's: its answers graded again on the new answers, code blanks by a grading worker).
Declining keeps every old score."""

import html
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from courses.models import Attempt, Enrollment
from courses.progress import course_progress
from courses.selftest import submit_answer
from grader.models import Submission, Verdict
from jobs.signals import score_changed
from jobs.sweeper import sweep
from studio import answer_regrade, drafts, structure
from studio.models import AnswerRegradeItem

# queue: also run on PostgreSQL (the workers lock the answers they store grades in).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.queue]

QUESTIONS = "01-first/questions.toml"
FOLDER = "02-second/ikiyle-carp"


@pytest.fixture
def teacher(client, mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    client.force_login(user)
    return user


@pytest.fixture
def answered(mini_course, make_user):
    """Two students' answers to first-choice: one right (Query ve Key), one wrong."""
    question = mini_course.questions.get(slug="first-choice")
    right, wrong = make_user("ayse"), make_user("burak")
    for user in (right, wrong):
        Enrollment.objects.create(user=user, course=mini_course)
    submit_answer(right, question, {"option": "a"})  # Query ve Key
    submit_answer(wrong, question, {"option": "b"})  # Query ve Value
    return question


def _edit(course, user, old: str, new: str, path: str = QUESTIONS) -> None:
    text = drafts.read_text(course, path)
    assert old in text, text
    drafts.save_draft(course, path, text.replace(old, new, 1), user)


def _publish(client, run_queue) -> str:
    return html.unescape(client.get(_publish_url(client, run_queue)).text)


def _publish_url(client, run_queue) -> str:
    response = client.post(reverse("studio:publish", args=["mini"]))
    assert response.status_code == 302, response.text
    run_queue()
    return response.url


def _counts(page: str) -> dict[str, str]:
    """The regrade page's counts for its one question, as its reader sees them."""
    return dict(re.findall(r"<dt>([^<]+)</dt><dd>([^<]+)</dd>", page))


def _swap_the_right_option(course, user) -> None:
    """The right option of first-choice becomes the wrong one and the other way round."""
    _edit(course, user, 'text = "Query ve Key"\ncorrect = true', 'text = "Query ve Key"')
    _edit(course, user, 'text = "Query ve Value"', 'text = "Query ve Value"\ncorrect = true')


def _scores(course, *users) -> list[tuple[float, int]]:
    """Each student's course score and solved items, as their progress page counts them."""
    return [
        (progress.score, progress.solved) for progress in (course_progress(user, course) for user in users)
    ]


@pytest.fixture
def score_changes():
    """The students whose scores the score_changed signal (LTI passback's) was told about."""
    heard: list[list[int]] = []

    def receiver(sender, user_ids, **kwargs):
        heard.append(list(user_ids))

    score_changed.connect(receiver, dispatch_uid="test-studio-regrade")
    yield heard
    score_changed.disconnect(dispatch_uid="test-studio-regrade")


def _offers(page: str) -> str:
    """The publish page's section on students' work graded on the earlier version."""
    start = page.index('id="regrade-heading"')
    return page[start : page.index("</section>", start)]


def test_editing_a_questions_text_keeps_its_attempts_and_offers_no_regrade(
    client, mini_course, teacher, answered, run_queue
):
    before = list(Attempt.objects.order_by("pk").values_list("pk", "question_id", "score", "correct"))
    _edit(mini_course, teacher, "Skor hangi iki parçadan hesaplanır?", "Ham skor hangi iki matristen gelir?")

    page = _publish(client, run_queue)

    assert "Sürüm 1 olarak yayınlandı" in page
    answered.refresh_from_db()
    assert "matristen gelir" in answered.prompt_html and not answered.retired
    assert list(Attempt.objects.order_by("pk").values_list("pk", "question_id", "score", "correct")) == before
    assert "(changed: prompt_html)" in page
    assert "regrade-heading" not in page and "notlandırılmış" not in page


def test_changing_a_questions_answer_keeps_the_grades_and_says_how_many_would_change(
    client, mini_course, teacher, answered, run_queue
):
    before = list(Attempt.objects.order_by("pk").values_list("score", "correct"))
    assert before == [(1.0, True), (0.0, False)]
    ayse, burak = answered.attempts.order_by("pk").values_list("user", flat=True)
    students = list(Enrollment.objects.filter(user__in=[ayse, burak]).order_by("user__username"))
    progress = _scores(mini_course, *(e.user for e in students))
    _swap_the_right_option(mini_course, teacher)

    page = _publish(client, run_queue)

    assert list(Attempt.objects.order_by("pk").values_list("score", "correct")) == before  # kept as graded
    assert _scores(mini_course, *(e.user for e in students)) == progress
    offer = _offers(page)
    assert "2 notlandırılmış cevaptan 2 tanesi başka bir puan alırdı" in offer, offer
    assert reverse("instructors:item", args=["mini", "q", "first-choice"]) in offer
    # The offer, not taken: nothing is graded again.
    assert 'name="question" value="first-choice" checked' in offer
    assert not AnswerRegradeItem.objects.exists()


def test_taking_the_offer_grades_the_answers_again_and_the_students_progress_follows(
    client, mini_course, teacher, answered, run_queue, score_changes
):
    ayse, burak = (e.user for e in Enrollment.objects.order_by("user__username"))
    assert _scores(mini_course, ayse, burak) == [(1.0, 1), (0.0, 0)]
    _swap_the_right_option(mini_course, teacher)
    publish_url = _publish_url(client, run_queue)
    score_changes.clear()
    client.force_login(ayse)  # her lesson page, kept in the page cache, says she was right
    assert "Doğru!" in html.unescape(client.get(answered.lesson.get_absolute_url()).text)
    client.force_login(teacher)

    response = client.post(publish_url + "yeniden-notlandir/", {"question": ["first-choice"]})

    assert response.status_code == 302
    page = html.unescape(client.get(response.url).text)
    assert "Her cevap, sorusunun şimdi sorduğuna göre yeniden notlandırıldı" in page, page
    assert _counts(page) == {
        "Cevaplar": "2",
        "Puanı artan": "1",
        "Puanı düşen": "1",
        "Puanı aynı kalan": "0",
        "Bekleyen": "0",
        "Notlandırılamayan": "0",
    }
    assert list(Attempt.objects.order_by("pk").values_list("score", "correct")) == [(0.0, False), (1.0, True)]
    assert _scores(mini_course, ayse, burak) == [(0.0, 0), (1.0, 1)]
    assert score_changes == [sorted([ayse.pk, burak.pk])]  # the LMS grade passback hears of both
    # Ayşe's lesson page now marks her answer wrong, with the new right option's feedback.
    client.force_login(ayse)
    lesson = html.unescape(client.get(answered.lesson.get_absolute_url()).text)
    assert "Doğru!" not in lesson
    # The publish page links to what the regrade did and offers it no more.
    client.force_login(teacher)
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert response.url in offer and 'name="question"' not in offer
    assert "Cevapları yeni cevaplara göre yeniden notlandırıldı." in offer, offer


def test_a_large_regrade_is_stored_a_chunk_at_a_time(
    client, mini_course, teacher, answered, run_queue, score_changes, monkeypatch
):
    monkeypatch.setattr(answer_regrade, "CHUNK", 1)  # each answer its own transaction
    ayse, burak = (e.user for e in Enrollment.objects.order_by("user__username"))
    _swap_the_right_option(mini_course, teacher)
    publish_url = _publish_url(client, run_queue)
    score_changes.clear()

    response = client.post(publish_url + "yeniden-notlandir/", {"question": ["first-choice"]})

    # Each chunk stores its answers' grades and tells score_changed of them together.
    assert score_changes == [[ayse.pk], [burak.pk]]
    assert _scores(mini_course, ayse, burak) == [(0.0, 0), (1.0, 1)]
    counts = _counts(html.unescape(client.get(response.url).text))
    assert (counts["Cevaplar"], counts["Puanı artan"], counts["Puanı düşen"]) == ("2", "1", "1")


def test_a_regrade_cut_off_midway_is_offered_again_and_finishes_the_rest(
    client, mini_course, teacher, answered, run_queue, monkeypatch
):
    monkeypatch.setattr(answer_regrade, "CHUNK", 1)
    ayse, burak = (e.user for e in Enrollment.objects.order_by("user__username"))
    _swap_the_right_option(mini_course, teacher)
    publish_url = _publish_url(client, run_queue)
    real_chunk, calls = answer_regrade._regrade_chunk, []

    def dies_on_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the request died here")
        return real_chunk(*args, **kwargs)

    monkeypatch.setattr(answer_regrade, "_regrade_chunk", dies_on_the_second)
    with pytest.raises(RuntimeError):
        client.post(publish_url + "yeniden-notlandir/", {"question": ["first-choice"]})
    assert _scores(mini_course, ayse, burak) == [(0.0, 0), (0.0, 0)]  # Ayşe regraded, Burak not yet
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert 'name="question"' in offer and "yeniden notlandırıldı." not in offer  # offered again

    monkeypatch.setattr(answer_regrade, "_regrade_chunk", real_chunk)
    client.post(publish_url + "yeniden-notlandir/", {"question": ["first-choice"]})
    assert _scores(mini_course, ayse, burak) == [(0.0, 0), (1.0, 1)]
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert 'name="question"' not in offer and "Cevapları yeni cevaplara göre yeniden notlandırıldı." in offer


def test_a_regrade_needs_a_question_the_publish_offered(client, mini_course, teacher, answered, run_queue):
    _swap_the_right_option(mini_course, teacher)
    publish_url = _publish_url(client, run_queue)

    refused = client.post(publish_url + "yeniden-notlandir/", {"question": ["no-such-question"]})

    assert refused.status_code == 400
    assert "Yeniden notlandırmak için en az bir soru seçin." in html.unescape(refused.text)
    assert list(Attempt.objects.order_by("pk").values_list("score", "correct")) == [(1.0, True), (0.0, False)]


def _swap_it_back(course, user) -> None:
    """first-choice's right option is Query ve Key again."""
    _edit(course, user, 'text = "Query ve Value"\ncorrect = true', 'text = "Query ve Value"')
    _edit(course, user, 'text = "Query ve Key"', 'text = "Query ve Key"\ncorrect = true')


def _answer(course, user, option: str) -> Attempt:
    Enrollment.objects.get_or_create(user=user, course=course)
    return submit_answer(user, course.questions.get(slug="first-choice"), {"option": option})


def test_the_regrade_leaves_out_answers_given_after_the_publish(
    client, mini_course, teacher, answered, make_user, run_queue
):
    _swap_the_right_option(mini_course, teacher)
    publish_url = _publish_url(client, run_queue)
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert "2 notlandırılmış cevaptan 2 tanesi başka bir puan alırdı" in offer, offer
    # A third student answers on the new answers, before the instructor takes the offer.
    later = _answer(mini_course, make_user("cemil"), "b")  # Query ve Value: right now
    assert (later.score, later.correct) == (1.0, True)

    response = client.post(publish_url + "yeniden-notlandir/", {"question": ["first-choice"]})

    page = html.unescape(client.get(response.url).text)
    assert _counts(page) == {
        "Cevaplar": "2",
        "Puanı artan": "1",
        "Puanı düşen": "1",
        "Puanı aynı kalan": "0",
        "Bekleyen": "0",
        "Notlandırılamayan": "0",
    }
    assert later.pk not in AnswerRegradeItem.objects.values_list("attempt", flat=True)
    assert list(Attempt.objects.order_by("pk").values_list("score", "correct")) == [
        (0.0, False),
        (1.0, True),
        (1.0, True),
    ]


def test_a_declined_regrade_stays_declined_at_the_next_publish(
    client, mini_course, teacher, answered, make_user, run_queue
):
    _swap_the_right_option(mini_course, teacher)
    _publish_url(client, run_queue)  # its offer declined: Ayşe and Burak keep their scores
    cemil = make_user("cemil")
    _answer(mini_course, cemil, "b")  # right on this version
    _swap_it_back(mini_course, teacher)

    publish_url = _publish_url(client, run_queue)

    offer = _offers(html.unescape(client.get(publish_url).text))
    assert "1 notlandırılmış cevaptan 1 tanesi başka bir puan alırdı" in offer, offer
    response = client.post(publish_url + "yeniden-notlandir/", {"question": ["first-choice"]})
    assert _counts(html.unescape(client.get(response.url).text))["Cevaplar"] == "1"
    assert list(Attempt.objects.order_by("pk").values_list("user__username", "score")) == [
        ("ayse", 1.0),
        ("burak", 0.0),
        ("cemil", 0.0),
    ]


def test_answers_regraded_on_a_publish_are_offered_again_at_the_next(
    client, mini_course, teacher, answered, run_queue
):
    _swap_the_right_option(mini_course, teacher)
    first = _publish_url(client, run_queue)
    assert client.post(first + "yeniden-notlandir/", {"question": ["first-choice"]}).status_code == 302
    assert list(Attempt.objects.order_by("pk").values_list("score", flat=True)) == [0.0, 1.0]
    _swap_it_back(mini_course, teacher)

    offer = _offers(_publish(client, run_queue))

    assert "2 notlandırılmış cevaptan 2 tanesi başka bir puan alırdı" in offer, offer


CODE_BLANK = """
[[questions]]
slug = "iki-kat"
kind = "fill_in"
prompt = "`x` sayısının iki katını yazın."
code = "y = ____"
check = ["y"]

[[questions.blanks]]
answer = "x * 2"

[[questions.cases]]
name = "bir"
inputs = { x = 3 }
"""


def _code_blank_answered(client, course, teacher, students, run_queue) -> str:
    """``students`` answer the code blank iki-kat rightly for its one case only; a second case
    is published, whose page it returns."""
    _edit(course, teacher, 'text = "Query ve Value"\n', 'text = "Query ve Value"\n' + CODE_BLANK)
    assert "Sürüm 1 olarak yayınlandı" in _publish(client, run_queue)
    question = course.questions.get(slug="iki-kat")
    for student in students:
        Enrollment.objects.create(user=student, course=course)
        submit_answer(student, question, {"blanks": ["x + 3"]})  # right for x = 3 only
    run_queue()
    assert list(Attempt.objects.values_list("score", "correct")) == [(1.0, True)] * len(students)
    # A second case shows the answer is wrong.
    _edit(
        course,
        teacher,
        "inputs = { x = 3 }\n",
        'inputs = { x = 3 }\n\n[[questions.cases]]\nname = "iki"\ninputs = { x = 5 }\n',
    )
    return _publish_url(client, run_queue)


def _lose_its_worker_until_the_sweeper_gives_up(item) -> None:
    for _lost in range(settings.GRADING_MAX_TRIES):
        assert AnswerRegradeItem.objects.claim(item.pk, timedelta(minutes=5))
        AnswerRegradeItem.objects.filter(pk=item.pk).update(lease_expires_at=timezone.now())
        sweep(timezone.now() + timedelta(seconds=1))
    assert AnswerRegradeItem.objects.get(pk=item.pk).status == "failed"


@pytest.mark.sandbox
def test_code_blank_answers_are_graded_again_by_a_grading_worker(
    client, mini_course, teacher, make_user, run_queue, score_changes
):
    student = make_user("ayse")
    publish_url = _code_blank_answered(client, mini_course, teacher, [student], run_queue)
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert "kodu korumalı alanda çalıştığı için" in offer, offer
    score_changes.clear()

    response = client.post(publish_url + "yeniden-notlandir/", {"question": ["iki-kat"]})

    assert list(Attempt.objects.values_list("score", "correct")) == [(1.0, True)]  # not in the web request
    assert AnswerRegradeItem.objects.get().status == "queued"
    assert "grading worker" not in (page := html.unescape(client.get(response.url).text))
    assert "korumalı alanda notlandırıyor" in page, page
    assert "Her cevap" not in page
    assert _counts(page)["Bekleyen"] == "1" and _counts(page)["Notlandırılamayan"] == "0"
    # The publish page says it is under way: neither offered again nor done.
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert "Notlandırıcı cevaplarının bazılarını hâlâ yeniden notlandırıyor" in offer, offer
    assert 'name="question"' not in offer and "✓" not in offer
    assert "tarihinde istenen yeniden notlandırılması: ne yaptığına bakın" in offer, offer
    # Its worker is lost again and again: the sweeper gives up, and the answer keeps its grade.
    _lose_its_worker_until_the_sweeper_gives_up(AnswerRegradeItem.objects.get())
    page = html.unescape(client.get(response.url).text)
    assert "Notlandırıcı bazı cevaplarda hata verdi; bu cevaplar eski puanlarını korur." in page, page
    assert "Her cevap" not in page and "Diğer cevaplar" not in page  # none was graded again
    assert _counts(page)["Bekleyen"] == "0" and _counts(page)["Notlandırılamayan"] == "1"
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert "Notlandırıcı cevaplarının bazılarında hata verdi; bu cevaplar eski puanlarını korur." in offer
    assert f'href="{response.url}">Yeniden notlandırmanın sayfasında yeniden deneyin' in offer, offer
    assert 'name="question"' not in offer and "✓" not in offer
    assert list(Attempt.objects.values_list("score", "correct")) == [(1.0, True)] and not score_changes
    assert client.post(response.url).status_code == 302  # "Yeniden dene"
    run_queue()
    assert list(Attempt.objects.values_list("score", "correct")) == [(0.0, False)]
    assert score_changes == [[student.pk]]
    page = html.unescape(client.get(response.url).text)
    assert "Her cevap, sorusunun şimdi sorduğuna göre yeniden notlandırıldı" in page, page
    assert _counts(page) == {
        "Cevaplar": "1",
        "Puanı artan": "0",
        "Puanı düşen": "1",
        "Puanı aynı kalan": "0",
        "Bekleyen": "0",
        "Notlandırılamayan": "0",
    }
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert "✓ Cevapları yeni cevaplara göre yeniden notlandırıldı." in offer, offer


@pytest.mark.sandbox
def test_a_regrade_the_grader_failed_on_in_part_names_what_was_graded_and_what_failed(
    client, mini_course, teacher, make_user, run_queue
):
    publish_url = _code_blank_answered(
        client, mini_course, teacher, [make_user("ayse"), make_user("burak")], run_queue
    )
    response = client.post(publish_url + "yeniden-notlandir/", {"question": ["iki-kat"]})
    lost, graded = AnswerRegradeItem.objects.order_by("pk")

    _lose_its_worker_until_the_sweeper_gives_up(lost)
    run_queue()

    assert AnswerRegradeItem.objects.get(pk=graded.pk).status == "done"
    page = html.unescape(client.get(response.url).text)
    assert "Her cevap" not in page
    assert "Diğer cevaplar, sorularının şimdi sorduğuna göre yeniden notlandırıldı." in page, page
    assert "Notlandırıcı bazı cevaplarda hata verdi; bu cevaplar eski puanlarını korur." in page
    assert _counts(page) == {
        "Cevaplar": "2",
        "Puanı artan": "0",
        "Puanı düşen": "1",
        "Puanı aynı kalan": "0",
        "Bekleyen": "0",
        "Notlandırılamayan": "1",
    }
    offer = _offers(html.unescape(client.get(publish_url).text))
    assert "Notlandırıcı cevaplarının bazılarında hata verdi" in offer and "✓" not in offer, offer


def test_a_changed_option_text_alone_keeps_every_answers_score(
    client, mini_course, teacher, answered, run_queue
):
    _edit(mini_course, teacher, 'text = "Query ve Value"', 'text = "Query ile Value"')

    page = _publish(client, run_queue)

    offer = _offers(page)
    assert "2 notlandırılmış cevap yeni cevaplarla da aynı puanı alır" in offer, offer


def test_changing_an_exercises_grading_offers_the_regrade_of_its_submissions(
    client, mini_course, teacher, make_user, run_queue
):
    structure.create_exercise(mini_course, "02-second", "ikiyle-carp", "İkiyle çarp", teacher)
    assert client.post(reverse("studio:start_check", args=["mini", FOLDER])).status_code == 302
    run_queue()
    assert "Sürüm 1 olarak yayınlandı" in _publish(client, run_queue)
    exercise = mini_course.exercises.get(slug="ikiyle-carp")
    student = make_user("ayse")
    Enrollment.objects.create(user=student, course=mini_course)
    Submission.objects.create(
        user=student,
        exercise=exercise,
        code="def scale(x):\n    return 2 * x\n",
        code_hash="x",
        status=Submission.Status.DONE,
        verdict=Verdict.PASSED,
        score=1.0,
        graded_hash=exercise.content_hash,
    )
    # The exercise now asks for three times x: its reference and its prompt change.
    _edit(mini_course, teacher, "return 2 * x", "return 3 * x", f"{FOLDER}/solution.py")
    assert client.post(reverse("studio:start_check", args=["mini", FOLDER])).status_code == 302
    run_queue()

    page = _publish(client, run_queue)

    submission = Submission.objects.get()
    assert (submission.verdict, submission.score) == (Verdict.PASSED, 1.0)  # nothing regraded yet
    offer = _offers(page)
    assert "1 gönderim daha önceki bir sürüme göre notlandırıldı" in offer, offer
    action = reverse("instructors:regrade_start", args=["mini", "ikiyle-carp"])
    assert f'action="{action}"' in offer
    started = client.post(action)
    assert started.status_code == 302
    assert exercise.regrades.get().items.get().submission_id == submission.pk


def test_a_question_with_variants_is_regraded_on_each_students_own_current_variant(
    client, make_user, tmp_path, run_queue
):
    from courses.importer import import_course
    from courses.models import Course, Question

    shutil.copytree(Path(__file__).parent / "fixtures" / "variants", tmp_path / "variants")
    import_course(tmp_path / "variants")
    course = Course.objects.get(slug="varyant")
    hoca = make_user("hoca")
    course.instructors.add(hoca)
    students = [make_user(f"ogrenci{n}") for n in range(3)]
    asked = {}
    for student in students:
        Enrollment.objects.create(user=student, course=course)
        question = Question.objects.get(course=course, slug="scale-factor").ask_for(student)
        asked[student.pk] = question.asked_variant
        # The square root, not its inverse: wrong today.
        submit_answer(student, question, {"value": str(question.asked_variant.params["root"])})
    assert set(Attempt.objects.values_list("score", flat=True)) == {0.0}
    # The question now asks for the square root itself.
    path = "01-scores/questions.toml"
    text = drafts.read_text(course, path)
    text = text.replace('answer = "{{ factor }}"', 'answer = "{{ root }}"', 1)
    text = text.replace('value = "{{ root }}"', 'value = "{{ factor }}"', 1)
    drafts.save_draft(course, path, text, hoca)
    client.force_login(hoca)
    published = client.post(reverse("studio:publish", args=["varyant"]))
    run_queue()
    assert "scale-factor" in _offers(html.unescape(client.get(published.url).text))

    response = client.post(published.url + "yeniden-notlandir/", {"question": ["scale-factor"]})

    assert response.status_code == 302
    for attempt in Attempt.objects.select_related("variant"):
        before = asked[attempt.user_id]
        assert (attempt.score, attempt.correct) == (1.0, True)
        # Graded on the variant the student is asked now: the same number, its new version.
        assert attempt.variant.current and attempt.variant.index == before.index
        assert attempt.variant_id != before.pk and attempt.variant.params == before.params
