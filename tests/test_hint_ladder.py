"""The hint ladder: an item's hints in steps, written as ``hints = ["…", "…"]`` in its file.

Step k opens after the student's k-th failed attempt (once step k-1 is open), by an explicit
press that is recorded once; open steps stay on the page. A step that may not be opened yet
is refused and records nothing. The lesson page's cache never shows one student's hints to
another, and the instructor's item page says who opened each step and who then got it right."""

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import caches
from django.urls import reverse
from django.utils import timezone

from courses.authoring import load_course
from courses.importer import import_course
from courses.models import Course, Exercise, HintOpening, Question
from grader.models import Submission, Verdict

FIXTURES = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.django_db

WHO_ATTENDS_HINTS = """hints = [
  "Skorun **iki** tarafı var: soran ve sorulan.",
  "Soran taraf Query'dir; sorulan taraf neyle karşılaştırılır?",
  "Skor $q_i \\\\cdot k_j$ biçimindedir.",
]
"""


def with_hints(folder: Path, text: str = WHO_ATTENDS_HINTS) -> Path:
    """The quiz course with ``text`` added to its first question (who-attends)."""
    questions = folder / "01-selftest" / "questions.toml"
    source = questions.read_text(encoding="utf-8")
    anchor = 'reveal = "after_first_attempt"\n'
    questions.write_text(source.replace(anchor, anchor + text, 1), encoding="utf-8")
    return folder


@pytest.fixture
def quiz_dir(tmp_path) -> Path:
    target = tmp_path / "quiz"
    shutil.copytree(FIXTURES / "quiz", target)
    return target


@pytest.fixture
def hinted(quiz_dir) -> Course:
    import_course(with_hints(quiz_dir))
    return Course.objects.get(slug="quiz")


@pytest.fixture(autouse=True)
def _empty_page_cache():
    caches["pages"].clear()
    yield
    caches["pages"].clear()


def login(client, user, course):
    course.enroll(user)
    client.force_login(user)
    return client


def lesson(client) -> str:
    return client.get(reverse("lesson", args=["quiz", "selftest"])).text


def article(page: str, slug: str) -> str:
    start = page.rindex("<article", 0, page.index(f'id="q-{slug}"'))
    return page[start : page.index("</article>", start)]


def answer(client, option: str, slug: str = "who-attends"):
    return client.post(reverse("answer_question", args=["quiz", "selftest", slug]), {"option": option})


def open_step(client, step, slug: str = "who-attends", **headers):
    return client.post(
        reverse("open_question_hint", args=["quiz", "selftest", slug]), {"step": step}, **headers
    )


def openings(user) -> list[int]:
    return list(HintOpening.objects.filter(user=user).order_by("step").values_list("step", flat=True))


# -- files ---------------------------------------------------------------------------------------


def problems(folder: Path) -> list[str]:
    return [str(p) for p in load_course(folder).problems]


def test_hints_are_rendered_like_the_rest_of_the_item_math_included(quiz_dir):
    source = load_course(with_hints(quiz_dir))
    assert not source.problems
    question = next(q for q in source.all_questions() if q.slug == "who-attends")
    assert len(question.hints) == 3
    assert "<strong>iki</strong>" in question.hints[0]
    assert "$" not in question.hints[2] and "math" in question.hints[2]  # KaTeX markup, not raw $…$


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('hints = "Bir ipucu"\n', "hints must be a list of Markdown strings, one per step"),
        ("hints = []\n", "hints = [] has no step: give at least one hint or remove the key"),
        ('hints = ["Bir", 2]\n', "hint 2 must be a string (Markdown), not a number"),
        ('hints = ["Bir", "  "]\n', "hint 2 is empty: write the step or remove it"),
        ('hints = ["Aynı", "Aynı"]\n', "hint 2 repeats an earlier step"),
        ('hints = ["1", "2", "3", "4", "5", "6"]\n', "hints has 6 steps; an item has at most 5"),
    ],
)
def test_a_bad_ladder_is_a_problem_at_its_line(quiz_dir, text, message):
    found = problems(with_hints(quiz_dir, text))
    assert len(found) == 1, found
    # who-attends' reveal is on line 6 of questions.toml: the hints follow it.
    assert found[0].startswith("quiz/01-selftest/questions.toml:7: ") and message in found[0]


def test_a_bad_ladder_refuses_the_import_and_changes_nothing(quiz_dir, hinted):
    from courses.importer import ImportRefused

    with_hints(quiz_dir, 'hints = ["Yeni", ""]\n')
    with pytest.raises(ImportRefused):
        import_course(quiz_dir)
    assert len(Question.objects.get(slug="who-attends").hints) == 3


def test_hints_work_for_every_kind_the_kind_never_sees_the_key(quiz_dir):
    questions = quiz_dir / "01-selftest" / "questions.toml"
    text = questions.read_text(encoding="utf-8")
    # Every question of the file (choice, matching, fill-in, numeric…) gets a ladder.
    text = text.replace("[[questions]]\n", '[[questions]]\nhints = ["Baştan okuyun.", "Tanıma bakın."]\n')
    questions.write_text(text, encoding="utf-8")
    source = load_course(quiz_dir)
    assert not source.problems, source.problems
    assert all(len(q.hints) == 2 for q in source.all_questions())


def test_an_exercise_has_its_ladder_in_exercise_toml(tmp_path):
    folder = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", folder)
    toml = folder / "01-lab" / "attn" / "exercise.toml"
    toml.write_text('hints = ["Ölçekleme nerede?", "$\\\\sqrt{d_k}$ ile bölün."]\n' + toml.read_text())
    source = load_course(folder)
    assert not source.problems, source.problems
    assert len(next(e for e in source.all_exercises() if e.slug == "attn").hints) == 2


# -- the rule per attempt count ------------------------------------------------------------------


def test_hint_k_opens_after_the_kth_wrong_answer_one_step_at_a_time(client, alice, hinted):
    login(client, alice, hinted)
    item = article(lesson(client), "who-attends")
    assert (
        "3 ipucu var: ilki ilk yanlış denemenizden sonra" in item and "data-hint-form" not in item
    )  # before any answer
    assert open_step(client, 1).status_code == 403 and openings(alice) == []

    answer(client, "qv")  # wrong once: step 1 may be opened, not step 2
    item = article(lesson(client), "who-attends")
    assert "İpucu 1&#x27;i göster" in item or "İpucu 1'i göster" in item
    assert open_step(client, 2).status_code == 403 and openings(alice) == []
    response = open_step(client, 1)
    assert response.status_code == 302 and response.url.endswith("#q-who-attends-hint-1")
    assert openings(alice) == [1]

    item = article(lesson(client), "who-attends")
    assert "Skorun <strong>iki</strong> tarafı var" in item
    assert "Soran taraf" not in item and "data-hint-form" not in item  # step 2 needs a second failure
    assert "Sonraki ipucu, bir sonraki yanlış denemenizden sonra açılır." in item

    answer(client, "vv")
    open_step(client, 2)
    assert openings(alice) == [1, 2]
    answer(client, "qk")  # solved: no more steps offered, the open ones stay
    item = article(lesson(client), "who-attends")
    assert "Soran taraf" in item and "data-hint-form" not in item
    assert open_step(client, 3).status_code == 403 and openings(alice) == [1, 2]


def test_opening_is_recorded_once(client, alice, hinted):
    login(client, alice, hinted)
    answer(client, "qv")
    open_step(client, 1)
    first = HintOpening.objects.get(user=alice)
    again = open_step(client, 1)
    assert again.status_code == 302
    assert list(HintOpening.objects.filter(user=alice)) == [first]


def test_a_correct_answer_is_no_failure(client, alice, hinted):
    login(client, alice, hinted)
    answer(client, "qk")
    assert open_step(client, 1).status_code == 403 and openings(alice) == []


def test_the_script_gets_the_block_with_the_new_step(client, alice, hinted):
    login(client, alice, hinted)
    answer(client, "qv")
    response = open_step(client, 1, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 200
    html = response.text
    assert html.lstrip().startswith("<section") and 'id="q-who-attends-hint-1"' in html
    assert "Skorun <strong>iki</strong>" in html and "1 / 3 açık" in html


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("step", ["0", "4", "-1", "bir", "", "¹", "9" * 5000])
def test_a_step_out_of_range_is_refused(client, alice, hinted, step):
    login(client, alice, hinted)
    answer(client, "qv")
    response = open_step(client, step)
    assert response.status_code == 400 and "Böyle bir ipucu yok" in response.text
    assert openings(alice) == []


def test_a_refusal_tells_the_script_why(client, alice, hinted):
    login(client, alice, hinted)
    response = open_step(client, 1, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 403 and 'role="alert"' in response.text
    assert "Bu ipucu bir yanlış deneme daha yaptığınızda açılır." in response.text
    assert openings(alice) == []


def test_get_is_not_allowed(client, alice, hinted):
    login(client, alice, hinted)
    answer(client, "qv")
    response = client.get(reverse("open_question_hint", args=["quiz", "selftest", "who-attends"]))
    assert response.status_code == 405 and openings(alice) == []


def test_not_enrolled_or_another_course_is_refused(client, alice, bob, hinted, mini_course):
    client.force_login(bob)  # not enrolled
    assert open_step(client, 1).status_code == 403 and openings(bob) == []
    # Enrolled in another course only: the question is not in it.
    mini_course.enroll(bob)
    wrong = client.post(reverse("open_question_hint", args=["mini", "first", "who-attends"]), {"step": 1})
    assert wrong.status_code == 404 and openings(bob) == []


def test_no_hint_while_an_exam_holding_the_item_is_open(client, alice, hinted):
    from assessments.models import Assessment

    login(client, alice, hinted)
    answer(client, "qv")
    now = timezone.now()
    Assessment.objects.create(
        course=hinted,
        slug="sinav",
        title="Ara sınav",
        kind=Assessment.Kind.EXAM,
        opens=now - timedelta(hours=1),
        due=now + timedelta(hours=1),
        closes=now + timedelta(hours=1),
        time_limit_minutes=30,
        feedback=Assessment.Feedback.AFTER_CLOSE,
        items=[{"item": "who-attends", "points": 1.0}],
    )
    assert "data-hint-form" not in article(lesson(client), "who-attends")
    response = open_step(client, 1)
    assert response.status_code == 403 and "Ara sınav" in response.text
    assert openings(alice) == []


# -- the page cache --------------------------------------------------------------------------------


def test_a_cached_page_never_shows_another_students_hints(client, alice, bob, hinted):
    """Alice and Bob give the same wrong answer and both pages are cached with the button.
    Alice opens a step: her page shows it at once (not her cached fragment from before, whose
    answers are the same), Bob's page never shows it, rendered or from the cache."""
    from django.test import Client

    bobs = login(Client(), bob, hinted)
    login(client, alice, hinted)
    answer(client, "qv")
    answer(bobs, "qv")
    lesson(client), lesson(bobs)  # both fragments cached with the button
    open_step(client, 1)
    alices = article(lesson(client), "who-attends")
    assert "Skorun <strong>iki</strong>" in alices and "data-hint-form" not in alices
    for _ in range(2):  # rendered, then from the cache
        bobs_item = article(lesson(bobs), "who-attends")
        assert "Skorun" not in bobs_item and "data-hint-form" in bobs_item
        assert "Skorun <strong>iki</strong>" in article(lesson(client), "who-attends")


def test_students_who_share_a_fragment_never_see_each_others_hints(client, alice, bob, quiz_dir):
    """A numeric question shows every student the same thing: students without answers share
    its cached fragment. Alice's open step (kept, say, from before a re-import gave her a new
    variant) makes hers her own: her page shows it, Bob's never, whoever comes first."""
    from django.test import Client

    questions = quiz_dir / "01-selftest" / "questions.toml"
    anchor = 'slug = "sqrt-dk"\n'
    text = questions.read_text(encoding="utf-8")
    questions.write_text(
        text.replace(anchor, anchor + 'hints = ["Karekökü önce bulun."]\n'), encoding="utf-8"
    )
    import_course(quiz_dir)
    course = Course.objects.get(slug="quiz")
    bobs = login(Client(), bob, course)
    login(client, alice, course)
    assert "Karekökü" not in article(lesson(bobs), "sqrt-dk")  # cached without hints
    HintOpening.objects.create(user=alice, question=Question.objects.get(slug="sqrt-dk"), step=1)
    for _ in range(2):  # rendered, then from the cache
        assert "Karekökü önce bulun." in article(lesson(client), "sqrt-dk")
        assert "Karekökü" not in article(lesson(bobs), "sqrt-dk")


def test_the_fragment_follows_the_students_own_state(client, alice, hinted):
    """The same student's cached fragment is not served after the state behind it changed."""
    login(client, alice, hinted)
    answer(client, "qv")
    assert "data-hint-form" in article(lesson(client), "who-attends")
    HintOpening.objects.create(user=alice, question=Question.objects.get(slug="who-attends"), step=1)
    item = article(lesson(client), "who-attends")
    assert "Skorun <strong>iki</strong>" in item and "data-hint-form" not in item


# -- exercises -------------------------------------------------------------------------------------


@pytest.fixture
def hinted_lab(tmp_path) -> Course:
    folder = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", folder)
    toml = folder / "01-lab" / "attn" / "exercise.toml"
    toml.write_text(
        'hints = ["Ölçekleme nerede?", "Skorları $\\\\sqrt{d_k}$ ile bölün."]\n' + toml.read_text()
    )
    import_course(folder)
    return Course.objects.get(slug="lab")


def submit(user, exercise: Exercise, verdict: str, *, mode=Submission.Mode.SUBMIT, at=None) -> Submission:
    return Submission.objects.create(
        user=user,
        exercise=exercise,
        code="def attention(): ...",
        code_hash="x",
        mode=mode,
        status=Submission.Status.DONE,
        verdict=verdict,
        score=1.0 if verdict == Verdict.PASSED else 0.0,
        created_at=at or timezone.now(),
    )


def test_an_exercise_step_opens_after_a_failed_submission_not_after_an_example_run(client, alice, hinted_lab):
    login(client, alice, hinted_lab)
    exercise = Exercise.objects.get(slug="attn")
    url = reverse("open_exercise_hint", args=["lab", "lab", "attn"])
    hints_url = reverse("exercise_hints", args=["lab", "lab", "attn"])
    submit(alice, exercise, Verdict.FAILED, mode=Submission.Mode.RUN)  # an example run is no attempt
    assert client.post(url, {"step": 1}).status_code == 403
    submit(alice, exercise, Verdict.FAILED)
    assert "Ölçekleme nerede?" not in client.get(hints_url).text
    response = client.post(url, {"step": 1})
    assert response.status_code == 302 and response.url.endswith("#ex-attn-hint-1")
    page = client.get(reverse("lesson", args=["lab", "lab"])).text
    assert "Ölçekleme nerede?" in page and "İpucu 2&#x27;yi göster" not in page
    assert "Ölçekleme nerede?" in client.get(hints_url).text
    assert list(HintOpening.objects.filter(user=alice).values_list("exercise__slug", "step")) == [("attn", 1)]


def row_of(table: str, marker: str) -> str:
    start = table.index(marker)
    return table[start : table.index("</tr>", start)]


# -- the instructor's item page ----------------------------------------------------------------------


def test_the_item_page_counts_openings_and_who_then_got_it_right(client, make_user, hinted):
    question = Question.objects.get(slug="who-attends")
    students = [make_user(name) for name in ("s1", "s2", "s3")]
    start = timezone.now() - timedelta(hours=1)
    from courses.models import Attempt

    def attempt(user, correct, minutes):
        Attempt.objects.create(
            user=user,
            question=question,
            answer={"option": "qk" if correct else "qv"},
            score=float(correct),
            correct=correct,
            created_at=start + timedelta(minutes=minutes),
        )

    for user in students:
        hinted.enroll(user)
        attempt(user, False, 0)
        HintOpening.objects.create(
            user=user, question=question, step=1, opened_at=start + timedelta(minutes=1)
        )
    attempt(students[0], True, 2)  # right after step 1
    attempt(students[1], False, 2)
    HintOpening.objects.create(
        user=students[1], question=question, step=2, opened_at=start + timedelta(minutes=3)
    )
    attempt(students[1], True, 4)  # right after step 2 (and so after step 1)
    teacher = make_user("hoca")
    hinted.instructors.add(teacher)
    client.force_login(teacher)
    page = client.get(reverse("instructors:item", args=["quiz", "q", "who-attends"])).text
    table = page[page.index('id="hints-heading"') : page.index("</table>", page.index('id="hints-heading"'))]
    rows = {step: row_of(table, f'data-hint-row="{step}"') for step in (1, 2, 3)}
    assert "Skorun iki tarafı var" in rows[1]
    assert "<td>3</td>" in rows[1] and "2 (%67)" in rows[1]
    assert "<td>1</td>" in rows[2] and "1 (%100)" in rows[2]
    assert "<td>0</td>" in rows[3] and "—" in rows[3]


def test_the_admin_shows_openings_and_keeps_hints_read_only(client, alice, hinted):
    from django.contrib.auth.models import User

    question = Question.objects.get(slug="who-attends")
    HintOpening.objects.create(user=alice, question=question, step=1)
    admin = User.objects.create_superuser("kok", "kok@example.com", "a-Long-passw0rd")
    client.force_login(admin)
    listing = client.get(reverse("admin:courses_hintopening_changelist"))
    assert listing.status_code == 200 and "alice" in listing.text
    page = client.get(reverse("admin:courses_question_change", args=[question.pk])).text
    assert 'name="hints"' not in page and "Skorun" in page  # shown, not an editable field


def test_a_generated_question_takes_no_placeholder_in_its_hints(tmp_path):
    folder = tmp_path / "variants"
    shutil.copytree(FIXTURES / "variants", folder)
    questions = folder / "01-scores" / "questions.toml"
    anchor = 'slug = "dot-score"\n'
    text = questions.read_text(encoding="utf-8")
    questions.write_text(
        text.replace(anchor, anchor + 'hints = ["Bileşenleri çarpın.", "İlk çarpım {{ q1 }} ile başlar."]\n'),
        encoding="utf-8",
    )
    found = problems(folder)
    assert found == [
        "variants/01-scores/questions.toml:3: hint 2 has a placeholder {{ … }}: hints are the same "
        "for every variant and are not filled in from the parameters"
    ]


def test_the_exercise_item_page_counts_openings_and_who_then_passed(client, make_user, hinted_lab):
    exercise = Exercise.objects.get(slug="attn")
    start = timezone.now() - timedelta(hours=1)
    first, second = make_user("s1"), make_user("s2")
    for user in (first, second):
        hinted_lab.enroll(user)
        submit(user, exercise, Verdict.FAILED, at=start)
        HintOpening.objects.create(
            user=user, exercise=exercise, step=1, opened_at=start + timedelta(minutes=1)
        )
    submit(first, exercise, Verdict.PASSED, at=start + timedelta(minutes=2))
    # Passing code sent before the step was opened does not count for it.
    submit(second, exercise, Verdict.PASSED, at=start + timedelta(seconds=30))
    teacher = make_user("hoca")
    hinted_lab.instructors.add(teacher)
    client.force_login(teacher)
    page = client.get(reverse("instructors:item", args=["lab", "e", "attn"])).text
    assert "İpucu merdiveni" in page and "başarısız gönderimlerinden sonra" in page
    table = page[page.index('id="hints-heading"') :]
    first_row = row_of(table, 'data-hint-row="1"')
    assert "Ölçekleme nerede?" in first_row and "<td>2</td>" in first_row and "1 (%50)" in first_row
    assert "<td>0</td>" in row_of(table, 'data-hint-row="2"')


def test_a_problem_in_one_step_of_a_long_ladder_is_reported_at_that_steps_line(quiz_dir):
    ladder = 'hints = [\n  "Bir \\"adım\\" burada.",\n  "İkinci adım.",\n  "İkinci adım.",\n]\n'
    found = problems(with_hints(quiz_dir, ladder))
    assert found == [
        "quiz/01-selftest/questions.toml:10: hint 3 repeats an earlier step: each step should say more"
    ]
