"""Every kind of page, as a visitor, a student, an instructor and an admin, in Turkish and in
English, at a desktop and a phone width: axe-core finds no serious or critical violation.

Each page is also saved, full length, in test-artifacts/pages/ (not compared with anything) so
a reviewer can look at what students and instructors see."""

from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "courses" / "content" / "attention"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = ROOT / "test-artifacts" / "pages"
WIDTHS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}
LANGUAGES = ("tr", "en")
PASSWORD = "Erisilebilir-2026"
FIGURES = "/kurs/attention/visual-attention/"  # four figures, every question kind, two exercises
PLAYGROUND = "/kurs/attention/scaled-dot-product/"  # the playground figure and an exercise


@pytest.fixture
def site(transactional_db, make_user):
    """The built-in course with a student who has answered and submitted, its instructor, an admin."""
    from courses.exercises import check_exercises
    from courses.importer import import_course
    from courses.models import Course
    from grader.grading import grade_claimed, submit

    import_course(COURSE, prepare_exercises=lambda source: check_exercises(source, build=True))
    course = Course.objects.get(slug="attention")
    student = make_user("ogrenci", password=PASSWORD)
    course.enroll(student)
    instructor = make_user("hoca", password=PASSWORD)
    course.instructors.add(instructor)
    make_user("yonetici", password=PASSWORD, is_staff=True, is_superuser=True)
    folder = COURSE / "07-visual-attention"
    for slug, code in (
        ("cay-blend", (folder / "cay-blend" / "solution.py").read_text()),
        ("causal-mask", (folder / "causal-mask" / "variants" / "mask-ignored.py").read_text()),
    ):
        grade_claimed(submit(student, course.exercises.get(slug=slug), code).submission.pk)
    return {"course": course, "student": student}


def pages_for(role: str, site) -> dict[str, str]:
    course = site["course"]
    if role == "visitor":
        return {
            "home": "/",
            "course": "/kurs/attention/",
            "login": "/accounts/login/",
            "signup": "/accounts/kayit/",
        }
    if role == "student":
        return {
            "home": "/",
            "course": "/kurs/attention/",
            "lesson-figures-questions-verdicts": FIGURES,
            "lesson-playground": PLAYGROUND,
            "dashboard": "/panom/",
            "submission-history": FIGURES + "alistirma/causal-mask/gecmis/",
        }
    if role == "instructor":
        question = course.questions.get(slug="visual-concepts")
        return {
            "instructor-dashboard": "/egitmen/attention/",
            "gradebook": "/egitmen/attention/notlar/",
            "item-exercise": "/egitmen/attention/oge/e/causal-mask/",
            "item-question": f"/egitmen/attention/oge/q/{question.slug}/",
            "submissions": f"/egitmen/attention/alistirma/causal-mask/ogrenci/{site['student'].pk}/",
            "test-item": "/egitmen/attention/alistirma/causal-mask/dene/",
            "lesson-preview": "/egitmen/attention/onizleme/visual-attention/",
        }
    return {
        "admin-index": "/admin/",
        "admin-course-change": f"/admin/courses/course/{course.pk}/change/",
        "admin-exercise-change": f"/admin/courses/exercise/{course.exercises.get(slug='causal-mask').pk}/change/",
    }


def log_in(page, username: str):
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()


def answer_some_questions(page):
    """A wrong single choice and a right matching, so the lesson shows feedback of both kinds."""
    page.goto(page.base_url + FIGURES)
    question = page.locator("#q-visual-cay-looks")
    question.locator("input[type=radio]").first.check()
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    page.locator("#q-visual-cay-looks [data-feedback]").wait_for()


def serious_violations(page) -> list[str]:
    if not page.evaluate("() => typeof window.axe === 'object'"):
        # Runtime evaluation, not a <script> tag: the page's CSP stays as strict as for users.
        page.evaluate(AXE.read_text() + "\n;0")
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{rule['id']} ({rule['impact']}): {rule['help']} — "
        + "; ".join(
            " ".join(node["target"]) + ": " + node["failureSummary"].replace("\n", " ")[:200]
            for node in rule["nodes"][:4]
        )
        for rule in result["violations"]
        if rule["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("role", ["visitor", "student", "instructor", "admin"])
def test_every_page_has_no_serious_accessibility_violation(page, site, role):
    assert AXE.exists(), "axe-core is missing: run `make setup` (npm ci)"
    if role != "visitor":
        log_in(page, {"student": "ogrenci", "instructor": "hoca", "admin": "yonetici"}[role])
    if role == "student":
        answer_some_questions(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = []
    for language in LANGUAGES:
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width, viewport in WIDTHS.items():
            page.set_viewport_size(viewport)
            for name, path in pages_for(role, site).items():
                response = page.goto(page.base_url + path)
                assert response.ok, f"{path}: {response.status}"
                assert page.locator("html").get_attribute("lang") == language
                page.screenshot(path=str(SHOTS / f"{role}-{name}-{language}-{width}.png"), full_page=True)
                found += [f"{path} [{language}, {width} px]: {v}" for v in serious_violations(page)]
    assert not found, "axe-core found:\n" + "\n".join(found)
