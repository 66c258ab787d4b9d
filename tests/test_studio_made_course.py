"""A course part made in the browser, end to end through the authoring area's own pages: a new
lesson with a formula and a figure, a question of every kind written through its form (a code
blank and a text blank for fill-in), an exercise with a misconception variant, checked by a
grading worker, then published. A student sees every item and a right answer to each is graded
right (the published specification is the one the form wrote). The course's files stay the
source of truth: its export (the command and the zip) imported again reports no change, and an
import from the folder it came from needs --force to overwrite what the browser changed."""

import html
import io
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from courses.exporter import export_course, read_folder
from courses.importer import ImportRefused, import_course
from courses.kinds import get_kind
from courses.kinds.forms import form_data
from courses.models import Attempt, Enrollment
from courses.selftest import submit_answer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sandbox]

LESSON = "03-deger"
EXERCISE = f"{LESSON}/ikiyle-carp"
LESSON_TEXT = "\nAğırlıklar $\\frac{e^{s_i}}{\\sum_j e^{s_j}}$ ile bulunur.\n\n::: visual playground\n:::\n"
MISCONCEPTION = """
[[misconceptions]]
tag = "no-doubling"
file = "variants/no_doubling.py"
hint = "Her öğeyi 2 ile çarptınız mı?"
"""

# One question of each kind as its table, and a right answer to it.
QUESTIONS = [
    (
        {
            "slug": "tek-secim",
            "kind": "single_choice",
            "prompt": "Skorlar neden $\\sqrt{d_k}$ ile bölünür?",
            "options": [
                {"text": "Softmax doymasın diye", "correct": True},
                {"text": "Skorlar negatif olmasın diye", "hint": "Bölmek işareti değiştirmez."},
            ],
        },
        lambda spec: {"option": next(o["id"] for o in spec["options"] if o["correct"])},
    ),
    (
        {
            "slug": "coklu-secim",
            "kind": "multiple_choice",
            "prompt": "Hangileri bir tokenın vektörüdür?",
            "options": [
                {"text": "Query", "correct": True},
                {"text": "Key", "correct": True},
                {"text": "Softmax", "misconception": "softmax-vektor", "hint": "Softmax bir işlemdir."},
            ],
        },
        lambda spec: {"options": [o["id"] for o in spec["options"] if o["correct"]]},
    ),
    (
        {
            "slug": "eslestir",
            "kind": "matching",
            "prompt": "Rolleri eşleştirin.",
            "distractors": ["Ne hesaplarım?"],
            "pairs": [{"left": "Query", "right": "Ne arıyorum?"}, {"left": "Key", "right": "Bende ne var?"}],
            "wrong_pairs": [
                {"left": "Query", "right": "Bende ne var?", "misconception": "qk-swap", "hint": "Query arar."}
            ],
        },
        lambda spec: {"pairs": {left["id"]: left["answer"] for left in spec["lefts"]}},
    ),
    (
        {
            "slug": "bosluk-metin",
            "kind": "fill_in",
            "prompt": "Ağırlıkları veren işlevin adını yazın.",
            "code": "w = ____(s)",
            "blanks": [{"answer": "softmax", "mode": "nocase", "accept": ["soft-max"]}],
        },
        lambda spec: {"blanks": ["Softmax"]},
    ),
    (
        {
            "slug": "bosluk-kod",
            "kind": "fill_in",
            "prompt": "Skor matrisini tamamlayın.",
            "code": "skor = Q @ ____",
            "check": ["skor"],
            "blanks": [{"answer": "K.T", "wrong": [{"pattern": "K", "hint": "Boyutlara bakın."}]}],
            "cases": [{"name": "a", "inputs": {"Q": [[1.0, 2.0]], "K": [[1.0, 0.0], [0.0, 1.0]]}}],
        },
        lambda spec: {"blanks": ["np.transpose(K)"]},
    ),
    (
        {
            "slug": "sayi",
            "kind": "numeric",
            "prompt": "$d_k = 64$ ise $1/\\sqrt{d_k}$ kaçtır?",
            "answer": 0.125,
            "tolerance": 0.001,
            "wrong_values": [{"value": 8, "hint": "Karekökün tersini alın."}],
        },
        lambda spec: {"value": "0,125"},
    ),
    (
        {
            "slug": "matris",
            "kind": "matrix",
            "prompt": "$S = Q K^T$'yi yazın.",
            "answer": [[1, 2], [3, 4]],
            "tolerance": 0.001,
            "wrong": [{"matrix": [[1, 3], [2, 4]], "hint": "Bu devriği."}],
        },
        lambda spec: {"matrix": [["1", "2"], ["3", "4"]]},
    ),
    (
        {
            "slug": "sirala",
            "kind": "ordering",
            "prompt": "Adımları sıraya koyun.",
            "steps": [
                {"id": "scores", "text": "Skorları hesaplayın"},
                {"id": "scale", "text": "Ölçekleyin"},
                {"id": "softmax", "text": "Softmax alın"},
            ],
            "distractors": [{"id": "divide-dk", "text": "$d_k$'ya bölün", "explanation": "Ölçek kökü."}],
            "after": {"scale": ["scores"], "softmax": ["scale"]},
        },
        lambda spec: {"order": ["scores", "scale", "softmax"]},
    ),
]


@pytest.fixture
def teacher(client, mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    client.force_login(user)
    return user


def _save_file(client, path: str, append: str) -> None:
    url = reverse("studio:edit", args=["mini", path])
    text = html.unescape(
        client.get(url).text.split('name="text"', 1)[1].split(">", 1)[1].split("</textarea>")[0]
    )
    response = client.post(url, {"text": text.lstrip("\n") + append, "action": "save"})
    assert response.status_code == 302, response.text


def _write_question(client, table: dict) -> None:
    form_class = get_kind(table["kind"]).authoring_form()
    data = form_data(form_class, form_class.initial_from_spec(table))
    url = reverse("studio:question_new", args=["mini", LESSON]) + f"?tur={table['kind']}"
    response = client.post(url, {**data, "action": "save"})
    assert response.status_code == 302, html.unescape(response.text)[-3000:]
    assert "kaydedildi=1" in response.url


def _make_course_part(client, run_queue) -> None:
    response = client.post(reverse("studio:new_lesson", args=["mini"]), {"slug": "deger", "title": "Değer"})
    assert response.status_code == 302
    _save_file(client, f"{LESSON}/lesson.md", LESSON_TEXT)
    for table, _answer in QUESTIONS:
        _write_question(client, table)
    new_exercise = reverse("studio:new_exercise", args=["mini", LESSON])
    assert client.post(new_exercise, {"slug": "ikiyle-carp", "title": "İkiyle çarp"}).status_code == 302
    _save_file(client, f"{EXERCISE}/exercise.toml", MISCONCEPTION)
    variant = reverse("studio:new_file", args=["mini", EXERCISE])
    assert client.post(variant, {"name": "variants/no_doubling.py"}).status_code == 302
    _save_file(client, f"{EXERCISE}/variants/no_doubling.py", "def scale(x):\n    return x * 3\n")
    check = client.post(reverse("studio:start_check", args=["mini", EXERCISE]))
    run_queue()
    assert "Her şey geçti" in html.unescape(client.get(check.url).text)
    published = client.post(reverse("studio:publish", args=["mini"]))
    assert published.status_code == 302, html.unescape(published.text)
    run_queue()
    assert "Sürüm 1 olarak yayınlandı" in html.unescape(client.get(published.url).text)


def test_a_lesson_with_a_question_of_each_kind_and_an_exercise_made_in_the_browser_reaches_students(
    client, mini_course, teacher, make_user, run_queue
):
    _make_course_part(client, run_queue)

    student = make_user("ogrenci")
    Enrollment.objects.create(user=student, course=mini_course)
    client.force_login(student)
    page = client.get("/kurs/mini/deger/").text
    assert (
        "ile bulunur" in page
        and "<mfrac>" in page
        and "$" not in page.split("<main", 1)[1]
        and "matrix-table" in page
    )
    lesson = mini_course.lessons.get(slug="deger")
    assert [q.slug for q in lesson.questions.order_by("order")] == [t["slug"] for t, _a in QUESTIONS]
    assert 'id="ex-ikiyle-carp"' in page
    for table, answer in QUESTIONS:
        question = lesson.questions.get(slug=table["slug"])
        assert f'id="q-{question.slug}"' in page and question.prompt_html in page, table["slug"]
        submit_answer(student, question, answer(question.spec))
    run_queue()  # the code blank is graded by a worker
    graded = {a.question.slug: a.correct for a in Attempt.objects.select_related("question")}
    assert graded == {table["slug"]: True for table, _a in QUESTIONS}


def test_a_course_made_in_the_browser_exports_and_imports_back_as_no_change(
    client, mini_course, teacher, tmp_path, mini_course_dir, run_queue
):
    _make_course_part(client, run_queue)
    files = export_course(mini_course)
    assert f"{EXERCISE}/variants/no_doubling.py" in files and f"{LESSON}/questions.toml" in files

    # The folder the course came from does not know the browser's lesson: importing it again
    # would retire it, so it is refused without --force and nothing changes.
    with pytest.raises(ImportRefused) as refused:
        import_course(mini_course_dir)
    problems = [str(problem) for problem in refused.value.problems]
    assert (
        "mini/03-deger/lesson.md:1: this file was changed in the browser (the authoring area or an upload) "
        "since this folder was imported; this import would remove it: import with --force to do so"
    ) in problems
    assert not any(p.startswith("mini/01-first/") for p in problems)  # the browser left it as it was
    assert export_course(mini_course) == files
    assert not mini_course.lessons.get(slug="deger").retired

    call_command("export_course", "mini", str(tmp_path / "export"))
    exported = tmp_path / "export" / "mini"
    assert read_folder(exported) == files
    assert import_course(exported).changes == []
    archive = zipfile.ZipFile(
        io.BytesIO(client.get(reverse("instructors:course_zip", args=["mini"])).content)
    )
    zipped = {
        Path(name).relative_to(Path(name).parts[0]).as_posix(): archive.read(name)
        for name in archive.namelist()
        if not name.endswith("/")
    }
    assert zipped == files

    # Asked to, the folder wins: the browser's lesson is retired, its students' work kept.
    report = import_course(mini_course_dir, force=True)
    assert "- lesson deger (retired; student data kept)" in report.changes
    assert import_course(mini_course_dir).changes == []
