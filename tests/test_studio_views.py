"""The authoring area's pages: the outline with each file's state, the file editor with its
preview (live and without JavaScript), publishing with its problems at their line, and the
revisions with their diffs and "go back". Only the course's instructors (and superusers) get in."""

import re

import pytest
from django.urls import reverse

from courses.models import Course
from studio import drafts

LESSON = "01-first/lesson.md"


@pytest.fixture
def teacher(client, mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    client.force_login(user)
    return user


def _urls(course_slug: str = "mini") -> list[tuple[str, str]]:
    return [
        ("get", reverse("studio:outline", args=[course_slug])),
        ("get", reverse("studio:edit", args=[course_slug, LESSON])),
        ("post", reverse("studio:preview", args=[course_slug])),
        ("post", reverse("studio:publish", args=[course_slug])),
        ("get", reverse("studio:revisions", args=[course_slug])),
        ("post", reverse("studio:revert", args=[course_slug, 1])),
        ("post", reverse("studio:new_lesson", args=[course_slug])),
        ("post", reverse("studio:new_exercise", args=[course_slug, "01-first"])),
        ("post", reverse("studio:new_file", args=[course_slug, "01-first"])),
        ("post", reverse("studio:retire_lesson", args=[course_slug, "01-first"])),
        ("post", reverse("studio:retire_item", args=[course_slug, "01-first", "first-choice"])),
        ("post", reverse("studio:move", args=[course_slug])),
    ]


@pytest.mark.django_db
def test_only_the_course_instructors_and_superusers_get_in(client, mini_course, make_user, alice):
    for method, url in _urls():
        assert getattr(client, method)(url).status_code == 302, url  # to the login page
    other_teacher = make_user("baska-hoca")  # teaches another course, not this one
    Course.objects.create(slug="baska", title="Başka kurs").instructors.add(other_teacher)
    for user in (alice, other_teacher):
        client.force_login(user)
        for method, url in _urls():
            data = {"text": "x", "path": LESSON, "slug": "yeni", "title": "Yeni", "name": "x.md"}
            data |= {"folder": "01-first", "direction": "down"}
            assert getattr(client, method)(url, data).status_code == 404, url
    assert not mini_course.draft_files.exists()
    # Staff status is for the admin: an instructor of another course who uses it gets nothing.
    staff = make_user("personel", is_staff=True)
    Course.objects.get(slug="baska").instructors.add(staff)
    client.force_login(staff)
    assert client.get(reverse("studio:outline", args=["mini"])).status_code == 404
    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))
    assert client.get(reverse("studio:outline", args=["mini"])).status_code == 200


@pytest.mark.django_db
def test_the_outline_lists_lessons_items_and_the_state_of_each_file(client, mini_course, teacher):
    drafts.save_draft(mini_course, LESSON, drafts.read_text(mini_course, LESSON) + "\nEk.\n", teacher)
    page = client.get(reverse("studio:outline", args=["mini"])).text
    assert "Yazarlık" in page and "1. Birinci ders" in page and "<code>first-choice</code>" in page
    first = page.index("<code>01-first/lesson.md</code>")
    assert "taslak" in page[first : first + 120]
    second = page.index("<code>02-second/lesson.md</code>")
    assert "yayında" in page[second : second + 120]
    assert "Bu dersi yayınla" in page and "Kursun tamamını yayınla" in page
    assert reverse("instructors:dashboard", args=["mini"]) in page
    assert "Yazarlık" in client.get(reverse("instructors:dashboard", args=["mini"])).text


@pytest.mark.django_db
def test_saving_a_draft_keeps_it_out_of_the_published_lesson(client, mini_course, teacher):
    url = reverse("studio:edit", args=["mini", LESSON])
    text = client.get(url).context["text"].replace("Skor $QK^T$", "Yeni skor $a^2$")
    response = client.post(url, {"text": text, "action": "save"}, follow=True)
    assert "Taslak kaydedildi" in response.text
    assert mini_course.draft_files.get(path=LESSON).updated_by == teacher
    assert "Yeni skor" not in mini_course.lessons.get(slug="first").body_source

    client.post(url, {"text": text, "action": "discard"})
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_the_preview_renders_math_and_names_problems_by_line(client, mini_course, teacher):
    text = drafts.read_text(mini_course, LESSON) + "\nYeni $\\frac{a}{b}$ ve $\\nosuch{x}$.\n"
    response = client.post(reverse("studio:preview", args=["mini"]), {"path": LESSON, "text": text})
    data = response.json()
    assert data["title"] == "Birinci ders"
    assert "<math" in data["html"] and "<mfrac>" in data["html"]
    line = text.splitlines().index("Yeni $\\frac{a}{b}$ ve $\\nosuch{x}$.") + 1
    assert [p["line"] for p in data["problems"]] == [line]
    assert "nosuch" in data["problems"][0]["message"]

    # Without JavaScript: the "Preview" button shows the same, nothing saved.
    page = client.post(reverse("studio:edit", args=["mini", LESSON]), {"text": text, "action": "preview"})
    assert "<mfrac>" in page.text and f"Satır {line}" in page.text
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_a_toml_file_is_edited_without_a_preview(client, mini_course, teacher):
    page = client.get(reverse("studio:edit", args=["mini", "01-first/questions.toml"])).text
    assert "first-choice" in page and "data-preview-url" not in page
    assert client.get(reverse("studio:edit", args=["mini", "nope/lesson.md"])).status_code == 404


@pytest.mark.django_db
def test_a_refused_publish_shows_the_problem_at_its_line_on_the_outline_and_in_the_editor(
    client, mini_course, teacher
):
    path = "01-first/questions.toml"
    broken = drafts.read_text(mini_course, path).replace('kind = "single_choice"', 'kind = "single_choice')
    drafts.save_draft(mini_course, path, broken, teacher)
    response = client.post(reverse("studio:publish", args=["mini"]))
    assert response.status_code == 400
    assert "Hiçbir şey yayınlanmadı" in response.text and f"{path}:3" in response.text
    editor = client.get(reverse("studio:edit", args=["mini", path])).text
    assert "Satır 3" in editor


@pytest.mark.django_db
def test_bad_math_in_a_lesson_refuses_the_publish_at_its_line_and_publishes_nothing(
    client, mini_course, teacher
):
    published = drafts.read_text(mini_course, LESSON, published=True)
    text = published + "\nYeni formül: $\\farc{1}{2}$.\n"
    client.post(reverse("studio:edit", args=["mini", LESSON]), {"text": text, "action": "save"})
    line = text.splitlines().index("Yeni formül: $\\farc{1}{2}$.") + 1

    response = client.post(reverse("studio:publish", args=["mini"]))

    assert response.status_code == 400
    assert "Hiçbir şey yayınlanmadı" in response.text and f"{LESSON}:{line}" in response.text
    assert "farc" in response.text
    editor = client.get(reverse("studio:edit", args=["mini", LESSON])).text
    assert f"Satır {line}" in editor and "farc" in editor
    lesson = mini_course.lessons.get(slug="first")
    assert "Yeni formül" not in lesson.body_source and not mini_course.revisions.exists()
    assert drafts.read_text(mini_course, LESSON) == text  # the draft is kept, to be corrected


@pytest.mark.django_db(transaction=True)
def test_publish_then_revisions_show_the_diff_and_go_back(client, mini_course, teacher, run_queue):
    url = reverse("studio:edit", args=["mini", LESSON])
    text = drafts.read_text(mini_course, LESSON)
    client.post(url, {"text": text.replace("Skor $QK^T$", "Birinci"), "action": "save"})
    response = client.post(reverse("studio:publish", args=["mini"]), {"summary": "İlk düzeltme"})
    status_url = response.url
    assert "sırada bekliyor" in client.get(status_url).text
    run_queue()
    assert "Sürüm 1 olarak yayınlandı" in client.get(status_url).text

    client.post(url, {"text": text.replace("Skor $QK^T$", "İkinci"), "action": "save"})
    client.post(reverse("studio:publish", args=["mini"]), {"only": "01-first"})
    run_queue()
    page = client.get(reverse("studio:revisions", args=["mini"])).text
    assert "Sürüm 2" in page and "İlk düzeltme" in page
    # Who published each revision, and when (in Turkish dates).
    assert re.search(
        r'<p class="muted">\d+ [A-ZÇĞİÖŞÜ][a-zçğıöşü]+ \d{4} [^<]*· hoca · İlk düzeltme</p>', page
    ), page
    assert "-Birinci ile" in page and "+İkinci ile" in page
    assert page.count("Bu sürüme dön") == 1  # the latest is what is published

    client.post(reverse("studio:revert", args=["mini", 1]))
    run_queue()
    assert "Birinci ile" in mini_course.lessons.get(slug="first").body_source
    assert mini_course.revisions.count() == 3


@pytest.mark.django_db(transaction=True)
def test_deleting_a_questions_file_retires_its_questions_on_publish_and_keeps_attempts(
    client, mini_course, teacher, run_queue, alice
):
    from courses.models import Attempt

    question = mini_course.questions.get(slug="first-choice")
    Attempt.objects.create(user=alice, question=question, answer={"choice": 0}, status="done")
    path = "01-first/questions.toml"
    url = reverse("studio:edit", args=["mini", path])
    client.post(url, {"text": "", "action": "delete"})
    outline = client.get(reverse("studio:outline", args=["mini"])).text
    at = outline.index(f"<code>{path}</code>")
    assert "silinecek" in outline[at : at + 120]
    assert "Dosyayı tutmak için taslağı atın" in client.get(url).text
    assert not mini_course.questions.get(slug="first-choice").retired  # only a draft so far

    client.post(reverse("studio:publish", args=["mini"]), {"only": "01-first"})
    run_queue()
    question.refresh_from_db()
    assert question.retired and Attempt.objects.filter(question=question).count() == 1
    assert client.get(url).status_code == 404  # the file is gone
    [change] = mini_course.revisions.get().changes
    assert change["path"] == path and change["new"] is None
