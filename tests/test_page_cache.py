"""The lesson page from the page cache (courses/pagecache.py): a repeated request costs a few
queries, and what it shows is never older than the course, never another language's, never
another student's, and never an instructor's preview."""

import re
from itertools import product

import pytest
from django.core.cache import caches
from django.urls import reverse

from courses.importer import import_course
from courses.models import Exercise, Lesson, Question
from courses.pagecache import CACHE_ALIAS
from courses.progress import exercise_states
from grader.models import SolutionReveal, Submission, Verdict

pytestmark = pytest.mark.django_db

# Session, user, the lesson with its course, the enrolment and the student's state of it (the
# visit, which of their work exists, the header's "Instructor" link: see
# tests/test_lesson_page_queries.py), the student's answers, and their submissions and reveals.
QUERIES_FOR_A_CACHED_LESSON = 5


@pytest.fixture(autouse=True)
def empty_page_cache():
    caches[CACHE_ALIAS].clear()
    yield
    caches[CACHE_ALIAS].clear()


def lesson_url(course="quiz", lesson="selftest"):
    return reverse("lesson", args=[course, lesson])


def article(page, slug):
    start = page.rindex("<article", 0, page.index(f'id="q-{slug}"'))
    return page[start : page.index("</article>", start)]


def without_tokens(page: str) -> str:
    """The page without what changes on every request: CSRF tokens and the scripts' nonce."""
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
    return re.sub(r'nonce="[^"]+"', "", page)


@pytest.fixture
def exercise(quiz):
    """A code exercise in the quiz lesson (its box needs no grading data to be shown)."""
    return Exercise.objects.create(
        course=quiz,
        lesson=quiz.lessons.get(slug="selftest"),
        slug="scores",
        title="Skorları hesaplayın",
        order=99,
        prompt_html="<p>Skorları hesaplayın.</p>",
        starter_code="scores = None",
        solution_code="scores = Q @ K.T",
        reveal={"rule": "always"},
    )


def submit(user, exercise, verdict=Verdict.PASSED, **fields):
    values = {"mode": Submission.Mode.SUBMIT, "status": Submission.Status.DONE, "verdict": verdict, **fields}
    return Submission.objects.create(
        user=user, exercise=exercise, code="scores = Q @ K.T", code_hash="h", score=1.0, **values
    )


def test_a_second_request_for_a_lesson_makes_a_few_queries_and_renders_the_same_page(
    student, alice, exercise, django_assert_max_num_queries
):
    submit(alice, exercise)
    student.post(reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qv"})
    first = student.get(lesson_url()).text
    with django_assert_max_num_queries(QUERIES_FOR_A_CACHED_LESSON):
        second = student.get(lesson_url()).text
    assert without_tokens(second) == without_tokens(first)
    assert "Skorları hesaplayın" in second and "Her soru türünden bir örnek" in second


def test_every_form_on_a_cached_page_carries_this_requests_csrf_token(student):
    student.get(lesson_url())
    page = student.get(lesson_url()).text
    tokens = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert len(tokens) >= 5 and all(len(token) == 64 for token in tokens)
    assert "dikkat-csrf-slot" not in page


def test_the_page_after_a_reimport_shows_the_new_text(client, alice, mini_course_dir):
    import_course(mini_course_dir)
    from courses.models import Course

    Course.objects.get(slug="mini").enroll(alice)
    client.force_login(alice)
    url = lesson_url("mini", "first")
    assert "Skor hangi iki parçadan hesaplanır?" in client.get(url).text
    lesson_md = mini_course_dir / "01-first" / "lesson.md"
    lesson_md.write_text(lesson_md.read_text().replace("ile hesaplanır:", "ile yeniden hesaplanır:"))
    questions = mini_course_dir / "01-first" / "questions.toml"
    questions.write_text(questions.read_text().replace("Skor hangi iki", "Skor, hangi iki"))
    import_course(mini_course_dir)
    page = client.get(url).text
    assert "ile yeniden hesaplanır:" in page and "Skor, hangi iki parçadan hesaplanır?" in page
    assert "Skor hangi iki" not in page


def test_an_edit_saved_in_the_admin_shows_at_once(student, quiz):
    assert "3 deneme hakkınız kaldı" in article(student.get(lesson_url()).text, "true-facts")
    question = Question.objects.get(slug="true-facts")
    question.max_attempts = 5  # as the admin's change form saves it
    question.save()
    assert "5 deneme hakkınız kaldı" in article(student.get(lesson_url()).text, "true-facts")
    lesson = Lesson.objects.get(slug="selftest")
    lesson.title = "Kendinizi deneyin"
    lesson.save()
    assert '<h1 id="lesson-title">Kendinizi deneyin</h1>' in student.get(lesson_url()).text


def test_turkish_and_english_pages_never_mix(student):
    turkish = student.get(lesson_url()).text
    student.post(reverse("set_language"), {"language": "en", "next": "/"})
    english = student.get(lesson_url()).text
    student.post(reverse("set_language"), {"language": "tr", "next": "/"})
    turkish_again = student.get(lesson_url()).text
    assert "Kendinizi sınayın" in turkish and "Test yourself" not in turkish
    assert "Cevabımı kontrol et" in turkish and "Check my answer" not in turkish
    assert "Test yourself" in english and "Kendinizi sınayın" not in english
    assert "Check my answer" in english and "Cevabımı kontrol et" not in english
    assert without_tokens(turkish_again) == without_tokens(turkish)


def test_a_correct_answer_appears_on_the_cached_page_and_only_for_its_student(student, bob, quiz):
    before = student.get(lesson_url()).text
    assert "Doğru!" not in article(before, "who-attends")
    student.post(reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qk"})
    after = student.get(lesson_url()).text
    item = article(after, "who-attends")
    assert "Doğru!" in item and "status-solved" in item and 'value="qk" required checked' in item
    assert '<li class="is-done"><a href="#q-who-attends">Soru 1</a>' in after  # the outline too
    quiz.enroll(bob)
    student.force_login(bob)
    other = article(student.get(lesson_url()).text, "who-attends")
    assert "Doğru!" not in other and "status-new" in other and "checked" not in other


def test_an_exercise_solved_and_its_solution_seen_appear_on_the_cached_page(student, alice, exercise):
    page = student.get(lesson_url()).text
    assert "Show the sample solution" not in page and "Örnek çözümü göster" in page
    submit(alice, exercise)
    page = student.get(lesson_url()).text
    assert '<li class="is-done"><a href="#ex-scores">Alıştırma: Skorları hesaplayın</a>' in page
    assert "1 notlandırılmış gönderim" in page
    SolutionReveal.objects.create(user=alice, exercise=exercise)
    page = student.get(lesson_url()).text
    assert "Örnek çözüm" in page and "scores = Q @ K.T</code>" in page and "Örnek çözümü göster" not in page


def test_an_instructors_preview_is_never_served_to_a_student_nor_a_students_page_in_preview(
    client, alice, make_user, quiz
):
    teacher = make_user("hoca")
    quiz.instructors.add(teacher)
    preview_url = reverse("instructors:preview", args=["quiz", "selftest"])
    client.force_login(teacher)
    client.post(
        reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qk", "preview": "1"}
    )
    preview = client.get(preview_url).text
    assert "Öğrenci önizlemesi" in preview
    quiz.enroll(alice)
    client.force_login(alice)
    client.post(reverse("answer_question", args=["quiz", "selftest", "true-facts"]), {"options": ["a", "b"]})
    page = client.get(lesson_url()).text
    assert "Öğrenci önizlemesi" not in page and 'name="preview"' not in page
    assert "Doğru!" not in article(page, "who-attends") and "Doğru!" in article(page, "true-facts")
    client.force_login(teacher)
    preview = client.get(preview_url).text
    assert "Doğru!" not in article(preview, "true-facts") and 'name="preview" value="1"' in preview


def test_the_page_counts_submissions_as_attempts_by_the_same_rule_as_the_gradebook(alice, exercise):
    for mode, status, verdict in product(Submission.Mode, Submission.Status, Verdict):
        submit(alice, exercise, verdict=verdict, mode=mode, status=status)
    submit(alice, exercise, preview=True)  # an instructor's preview is never the student's
    state = exercise_states(alice, [exercise])[exercise.pk]
    counted = set(Submission.objects.counted().filter(user=alice).values_list("pk", flat=True))
    assert {row.pk for row in state.submissions if row.counted} == counted
    assert len(state.submissions) == Submission.objects.filter(preview=False).count()
