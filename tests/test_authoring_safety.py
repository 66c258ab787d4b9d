"""What authors and admins cannot slip into the site: markup in lesson text, raw HTML and
instructor rights in the admin, file names that climb out of their folder, sandbox runs in
a web request."""

import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.urls import reverse

from courses.authoring import load_course
from courses.importer import ImportRefused, import_course
from courses.models import Course
from courses.rendering import render_math

FIXTURES = Path(__file__).parent / "fixtures"


class _Page(HTMLParser):
    """The elements of a page and the text a reader sees."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.text = ""
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text += data.replace("\xa0", " ")

    def having(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in attrs.items())]


def write_lesson(course_dir: Path, body: str) -> None:
    (course_dir / "02-second" / "lesson.md").write_text(
        f'+++\nslug = "second"\ntitle = "İkinci ders"\norder = 2\n+++\n\n{body}\n', encoding="utf-8"
    )


def lesson_page(client, user, course_slug: str, lesson_slug: str) -> _Page:
    Course.objects.get(slug=course_slug).enroll(user)
    client.force_login(user)
    response = client.get(reverse("lesson", args=[course_slug, lesson_slug]))
    assert response.status_code == 200
    return _Page(response.text)


# --- 1. Lesson text carries no markup of its own ----------------------------------------------


@pytest.mark.django_db
def test_html_written_inside_math_text_is_shown_as_text_and_never_obeyed(client, alice, mini_course_dir):
    # "/" separates attributes as a space would (latex2mathml turns spaces into &#x000A0;).
    write_lesson(
        mini_course_dir,
        'Yönlendirme: $\\text{<meta/http-equiv="refresh"/content="0">}$\n\n'
        '$$\\text{<form/action="https://evil.example/"><input/name="parola"></form>}$$',
    )
    import_course(mini_course_dir)
    page = lesson_page(client, alice, "mini", "second")
    assert not page.having("meta", **{"http-equiv": "refresh"})
    assert not page.having("form", action="https://evil.example/")
    assert not page.having("input", name="parola")
    assert '<meta/http-equiv="refresh"/content="0">' in page.text  # the student reads what was written


@pytest.mark.django_db
def test_links_styles_and_classes_smuggled_in_through_latex_are_dropped(client, alice, mini_course_dir):
    # latex2mathml turns \href, \style and \class into attributes; only the allow-list stops them.
    (mini_course_dir / "01-first" / "questions.toml").write_text(
        '[[questions]]\nslug = "first-choice"\nkind = "single_choice"\n'
        'prompt = "$\\\\href{javascript:alert(1)}{Tıklayın}$"\n'
        'explanation = "$\\\\style{position:fixed;inset:0}{x}$"\n'
        '[[questions.options]]\ntext = "$\\\\class{visual-controls}{Query}$ ve Key"\ncorrect = true\n'
        '[[questions.options]]\ntext = "Query ve Value"\n',
        encoding="utf-8",
    )
    import_course(mini_course_dir)
    page = lesson_page(client, alice, "mini", "first")
    attributes = [a for _tag, a in page.elements]
    assert not any(value and "javascript:" in value for a in attributes for value in a.values())
    assert not any("position:fixed" in (a.get("style") or "") for a in attributes)
    assert not page.having("mrow", **{"class": "visual-controls"})
    assert "Tıklayın" in page.text and "Query ve Key" in page.text


def test_formulas_in_figures_are_cleaned_too():
    # Figures build formulas from words of toy.toml; a word cannot close \text{…} and add a link.
    mathml, _problem = render_math("\\text{çay}\\href{javascript:alert(1)}{x}", display=False)
    assert "javascript:" not in mathml and "<mtext>çay</mtext>" in mathml


@pytest.mark.django_db
def test_figures_keep_their_controls_while_the_text_around_them_is_cleaned(client, alice, tmp_path):
    course_dir = tmp_path / "visuals"
    shutil.copytree(FIXTURES / "visuals", course_dir)
    lesson = course_dir / "01-figures" / "lesson.md"
    lesson.write_text(
        lesson.read_text(encoding="utf-8") + "\n$\\href{javascript:alert(1)}{Bağlantı}$\n", encoding="utf-8"
    )
    import_course(course_dir)
    page = lesson_page(client, alice, "visuals", "figures")
    figures = {a.get("data-visual") for a in page.having("figure")}
    assert {"heatmap", "rotate", "blend", "playground"} <= figures
    # heatmap, rotate and playground bring their numbers for visuals.js
    assert len(page.having("script", type="application/json")) == 3
    assert page.having("input", type="range") and page.having("button", type="button")
    assert page.having("input", **{"data-matrix": "Q"})
    assert not any("javascript:" in (value or "") for _tag, a in page.elements for value in a.values())


# --- 3. Names used in paths are slugs ---------------------------------------------------------


def add_exercise(course_dir: Path, folder: str, misconception: str) -> Path:
    exercise = course_dir / "01-first" / folder
    (exercise / "variants").mkdir(parents=True)
    (exercise / "exercise.toml").write_text(
        'slug = "scores"\ntitle = "Skorlar"\nkind = "function"\nfunction = "scores"\n\n'
        f'[[misconceptions]]\n{misconception}\nhint = "Boyutlara bakın."\n',
        encoding="utf-8",
    )
    (exercise / "solution.py").write_text("def scores(Q, K):\n    return Q @ K.T\n", encoding="utf-8")
    (exercise / "variants" / "no-transpose.py").write_text(
        "def scores(Q, K):\n    return Q @ K\n", encoding="utf-8"
    )
    return exercise


@pytest.mark.django_db
def test_a_misconception_tag_that_climbs_out_of_its_folder_is_refused_at_its_line(mini_course_dir):
    # The tag names the folder of the variant's grading data: "../x" would write elsewhere.
    add_exercise(mini_course_dir, "scores", 'tag = "../../escape"\nfile = "variants/no-transpose.py"')
    problems = [str(p) for p in load_course(mini_course_dir).problems]
    assert problems == [
        "mini/01-first/scores/exercise.toml:7: misconception tag '../../escape' "
        "must be lowercase letters and digits joined by hyphens"
    ]
    with pytest.raises(ImportRefused):
        import_course(mini_course_dir)
    assert not Course.objects.exists()


def test_folder_and_variant_file_names_must_be_slugs(mini_course_dir):
    add_exercise(
        mini_course_dir,
        "Skor Alıştırması",
        'tag = "no-transpose"\nfile = "variants/../variants/no-transpose.py"',
    )
    (mini_course_dir / "01-first" / "questions").mkdir()
    shutil.copy(
        mini_course_dir / "01-first" / "questions.toml",
        mini_course_dir / "01-first" / "questions" / "Soru 1.toml",
    )
    (mini_course_dir / "01-first" / "questions.toml").unlink()
    shutil.move(mini_course_dir / "02-second", mini_course_dir / "02 ikinci")
    problems = [str(p) for p in load_course(mini_course_dir).problems]
    assert any(
        p.startswith("mini/02 ikinci/lesson.md:1: lesson folder name '02 ikinci' must be lowercase")
        for p in problems
    )
    assert any(
        p.startswith("mini/01-first/Skor Alıştırması/exercise.toml:1: exercise folder name") for p in problems
    )
    assert any(
        p.startswith("mini/01-first/questions/Soru 1.toml:1: question file name 'Soru 1'") for p in problems
    )
    assert any(
        p.startswith(
            "mini/01-first/Skor Alıştırması/exercise.toml:8: variant file "
            "'variants/../variants/no-transpose.py' must be a .py file"
        )
        for p in problems
    )


def test_the_built_in_course_and_the_fixtures_use_slug_names():
    for course in (
        Path(__file__).resolve().parent.parent / "courses" / "content" / "attention",
        FIXTURES / "lab",
        FIXTURES / "quiz",
        FIXTURES / "visuals",
    ):
        assert load_course(course).problems == [], course


# --- 2. The admin edits no raw HTML, code or instructor rights for instructors ---------------


@pytest.fixture
def teacher(make_user):
    """An instructor as the admin sees one: staff with the courses app's permissions."""
    from django.contrib.auth.models import Permission

    user = make_user("hoca", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="courses"))
    return user


@pytest.fixture
def lab_files(db):
    import_course(FIXTURES / "lab")  # without grading data: nothing here runs code
    return Course.objects.get(slug="lab")


@pytest.mark.django_db
def test_an_instructor_cannot_change_solutions_starters_or_hints_in_the_admin(client, teacher, lab_files):
    lab_files.instructors.add(teacher)
    exercise = lab_files.exercises.get(slug="attn")
    before = (exercise.solution_code, exercise.starter_code, exercise.misconceptions)
    client.force_login(teacher)
    url = reverse("admin:courses_exercise_change", args=[exercise.pk])
    form = client.get(url).text
    for field in ("solution_code", "starter_code", "misconceptions"):
        assert f'name="{field}"' not in form
    response = client.post(
        url,
        {
            "title": "Attention",
            "order": "5",
            "solution_code": "def attention(Q, K, V, mask=None):\n    return 0\n",
            "starter_code": "import os\n",
            "misconceptions": '[{"tag": "no-scaling", "hint_html": "<img src=x onerror=alert(1)>"}]',
        },
    )
    assert response.status_code == 302  # saved: the title and order are still editable
    exercise.refresh_from_db()
    assert (exercise.solution_code, exercise.starter_code, exercise.misconceptions) == before
    assert exercise.order == 5


@pytest.mark.django_db
def test_only_a_superuser_can_make_someone_an_instructor(client, make_user, teacher, mini_course):
    mini_course.instructors.add(teacher)
    friend = make_user("arkadas", is_staff=True)
    client.force_login(teacher)
    url = reverse("admin:courses_course_change", args=[mini_course.pk])
    assert 'name="instructors"' not in client.get(url).text
    response = client.post(
        url,
        {
            "title": "Mini kurs",
            "summary": "",
            "enrollment": "open",
            "enrollment_code": "",
            "score_policy": "best",
            "instructors": [teacher.pk, friend.pk],
            "lessons-TOTAL_FORMS": "0",
            "lessons-INITIAL_FORMS": "0",
            "lessons-MIN_NUM_FORMS": "0",
            "lessons-MAX_NUM_FORMS": "1000",
        },
    )
    assert response.status_code == 302
    assert list(mini_course.instructors.all()) == [teacher]
    assert not friend.taught_courses.exists()

    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))
    assert 'name="instructors"' in client.get(url).text


@pytest.mark.django_db
def test_saving_a_lesson_in_the_admin_keeps_its_figures_and_body(client, alice, make_user, tmp_path):
    course_dir = tmp_path / "visuals"
    shutil.copytree(FIXTURES / "visuals", course_dir)
    import_course(course_dir)
    lesson = Course.objects.get(slug="visuals").lessons.get(slug="figures")
    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))
    url = reverse("admin:courses_lesson_change", args=[lesson.pk])
    assert 'name="body_source"' not in client.get(url).text  # the body is changed in lesson.md
    response = client.post(
        url,
        {
            "title": "Dört görsel (yeni başlık)",
            "order": "1",
            "summary": "",
            "body_source": '$\\text{<form/action="https://evil.example/">}$',
            **{
                f"{prefix}-{key}": value
                for prefix in ("questions", "exercises")
                for key, value in (
                    ("TOTAL_FORMS", "0"),
                    ("INITIAL_FORMS", "0"),
                    ("MIN_NUM_FORMS", "0"),
                    ("MAX_NUM_FORMS", "1000"),
                )
            },
        },
    )
    assert response.status_code == 302
    page = lesson_page(client, alice, "visuals", "figures")
    assert "Dört görsel (yeni başlık)" in page.text
    assert {"heatmap", "rotate", "blend", "playground"} <= {
        a.get("data-visual") for a in page.having("figure")
    }
    assert not page.having("form", action="https://evil.example/")


# --- 4. The admin's re-import runs in a grading worker -----------------------------------------


@pytest.mark.django_db(transaction=True)
def test_reimport_from_the_admin_is_queued_and_its_outcome_shows_on_the_course_page(
    client, make_user, mini_course_dir, run_queue
):
    import_course(mini_course_dir)
    course = Course.objects.get(slug="mini")
    lesson = mini_course_dir / "02-second" / "lesson.md"
    lesson.write_text(
        lesson.read_text(encoding="utf-8").replace("İkinci ders", "İkinci ders, yeniden"), encoding="utf-8"
    )
    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))
    changelist = reverse("admin:courses_course_changelist")
    response = client.post(changelist, {"action": "reimport", "_selected_action": [course.pk]}, follow=True)
    assert "sıraya alındı" in response.text
    assert course.lessons.get(slug="second").title == "İkinci ders"  # nothing was imported in the request
    change_page = reverse("admin:courses_course_change", args=[course.pk])
    assert "notlandırıcı bekleniyor" in client.get(change_page).text

    run_queue()
    assert course.lessons.get(slug="second").title == "İkinci ders, yeniden"
    page = client.get(change_page).text
    assert "1 değişiklik" in page and "~ lesson second (changed: title)" in page

    lesson.write_text(lesson.read_text(encoding="utf-8") + "\n$\\farc{1}{2}$\n", encoding="utf-8")
    client.post(changelist, {"action": "reimport", "_selected_action": [course.pk]})
    run_queue()
    page = client.get(change_page).text
    assert "İçe aktarılmadı" in page and "mini/02-second/lesson.md:9: unknown LaTeX command \\farc" in page
    assert (
        course.lessons.get(slug="second").title == "İkinci ders, yeniden"
    )  # a refused import changes nothing
