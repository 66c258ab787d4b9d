"""The outline's structure in the browser authoring area: a new lesson or exercise, retiring a
lesson or an item, a new order of lessons and items; each is a draft of the course's files
that the import sees on publish (students' work on a retired item is kept). And a save of a
file someone else saved since it was opened is refused with the difference shown."""

import html

import pytest
from django.urls import reverse

from courses.models import Attempt, Course
from studio import drafts, structure

SECOND_QUESTION = """
[[questions]]
slug = "second-choice"
kind = "single_choice"
prompt = "Hangisi bir vektördür?"

[[questions.options]]
text = "Query"
correct = true

[[questions.options]]
text = "Skor tablosu"
"""


@pytest.fixture
def teacher(client, mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    client.force_login(user)
    return user


def _outline(client) -> str:
    return html.unescape(client.get(reverse("studio:outline", args=["mini"])).text)


def _publish(client, run_queue) -> dict:
    response = client.post(reverse("studio:publish", args=["mini"]))
    assert response.status_code == 302, html.unescape(response.text)
    run_queue()
    outcome = drafts.publish_files.get_result(response.url.rstrip("/").rsplit("/", 1)[1]).return_value
    assert outcome["imported"], outcome
    return outcome


@pytest.mark.django_db(transaction=True)
def test_a_new_lesson_is_a_draft_folder_that_students_see_once_published(
    client, mini_course, teacher, run_queue, alice
):
    url = reverse("studio:new_lesson", args=["mini"])
    response = client.post(url, {"slug": "value", "title": "Value: Ne taşırım?"})
    assert response.status_code == 302
    assert response.url == reverse("studio:edit", args=["mini", "03-value/lesson.md"])
    assert drafts.file_states(mini_course) | {} == {
        "01-first/lesson.md": "published",
        "01-first/questions.toml": "published",
        "02-second/lesson.md": "published",
        "03-value/lesson.md": "draft",
        "03-value/questions.toml": "draft",
        "course.toml": "published",
    }
    assert "3. Value: Ne taşırım?" in _outline(client)
    assert not mini_course.lessons.filter(slug="value").exists()  # a draft only

    _publish(client, run_queue)

    lesson = mini_course.lessons.get(slug="value")
    assert (lesson.title, lesson.order, lesson.retired) == ("Value: Ne taşırım?", 3, False)
    mini_course.enroll(alice)
    client.force_login(alice)
    page = html.unescape(client.get("/kurs/mini/value/").text)
    assert "Ders metnini buraya Markdown ile yazın" in page and "<math" in page


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("first", "first bu kursta zaten kullanılıyor; başka bir ad seçin."),
        ("Yeni Ders", "Kısa çizgiyle birleşen küçük harfler ve rakamlar kullanın"),
        ("", "Bu alan zorunludur."),
    ],
)
@pytest.mark.django_db
def test_a_new_lesson_with_a_slug_in_use_or_malformed_is_refused_at_the_field(
    client, mini_course, teacher, slug, message
):
    response = client.post(reverse("studio:new_lesson", args=["mini"]), {"slug": slug, "title": "Başlık"})
    assert response.status_code == 400
    page = html.unescape(response.text)
    field = page.index('id="id_slug"')
    assert message in page[field : field + 600]
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_a_new_exercise_gets_files_that_pass_the_checks_without_a_sandbox(
    client, mini_course, teacher, tmp_path
):
    from courses.authoring import load_course
    from courses.exporter import write_folder

    response = client.post(
        reverse("studio:new_exercise", args=["mini", "02-second"]),
        {"slug": "ikiyle-carp", "title": "İkiyle çarp"},
    )
    assert response.url == reverse("studio:edit", args=["mini", "02-second/ikiyle-carp/exercise.toml"])
    files = drafts.working_copy(mini_course)
    assert {p for p in files if p.startswith("02-second/ikiyle-carp/")} == {
        f"02-second/ikiyle-carp/{name}" for name in ("exercise.toml", "starter.py", "solution.py", "cases.py")
    }
    write_folder(files, tmp_path / "mini")
    source = load_course(tmp_path / "mini")
    assert source.problems == []
    [exercise] = source.all_exercises()
    assert (exercise.slug, exercise.title) == ("ikiyle-carp", "İkiyle çarp")

    again = client.post(
        reverse("studio:new_exercise", args=["mini", "01-first"]), {"slug": "first-choice", "title": "X"}
    )
    assert again.status_code == 400
    assert "first-choice bu kursta zaten kullanılıyor" in html.unescape(again.text)


@pytest.mark.django_db(transaction=True)
def test_retiring_a_question_and_a_lesson_keeps_students_attempts(
    client, mini_course, teacher, run_queue, alice
):
    path = "01-first/questions.toml"
    drafts.save_draft(mini_course, path, drafts.read_text(mini_course, path) + SECOND_QUESTION, teacher)
    _publish(client, run_queue)
    first = mini_course.questions.get(slug="first-choice")
    Attempt.objects.create(user=alice, question=first, answer={"choice": 0}, status="done")

    confirm = html.unescape(
        client.get(reverse("studio:retire_item", args=["mini", "01-first", "first-choice"])).text
    )
    assert "first-choice sorusu emekliye ayrılsın mı?" in confirm
    assert "yanıtları, gönderimleri ve ilerlemeleri korunur" in confirm
    client.post(reverse("studio:retire_item", args=["mini", "01-first", "first-choice"]))
    client.post(reverse("studio:retire_lesson", args=["mini", "02-second"]))
    text = drafts.read_text(mini_course, path)
    assert "first-choice" not in text and 'slug = "second-choice"' in text
    assert drafts.file_states(mini_course)["02-second/lesson.md"] == drafts.DELETED
    assert not first.retired

    _publish(client, run_queue)

    first.refresh_from_db()
    assert first.retired and Attempt.objects.filter(question=first).count() == 1
    assert not mini_course.questions.get(slug="second-choice").retired
    assert mini_course.lessons.get(slug="second").retired
    assert "İkinci ders" not in _outline(client)


@pytest.mark.django_db(transaction=True)
def test_moving_lessons_and_items_writes_their_order_keys_and_the_import_follows(
    client, mini_course, teacher, run_queue
):
    path = "01-first/questions.toml"
    drafts.save_draft(mini_course, path, drafts.read_text(mini_course, path) + SECOND_QUESTION, teacher)
    move = reverse("studio:move", args=["mini"])

    response = client.post(move, {"folder": "02-second", "direction": "up"})
    assert response.status_code == 302 and response.url.endswith("#lesson-02-second")
    response = client.post(move, {"folder": "01-first", "slug": "second-choice", "direction": "up"})
    assert response.status_code == 302

    page = _outline(client)
    assert page.index("1. İkinci ders") < page.index("2. Birinci ders")
    assert page.index("<code>second-choice</code>") < page.index("<code>first-choice</code>")
    assert "order = 1\n" in drafts.read_text(mini_course, "02-second/lesson.md")
    questions = drafts.read_text(mini_course, path)
    assert questions.index("order = 20") < questions.index("order = 10")  # first-choice is second now

    _publish(client, run_queue)
    assert list(Course.objects.get(slug="mini").active_lessons().values_list("slug", flat=True)) == [
        "second",
        "first",
    ]
    lesson = mini_course.lessons.get(slug="first")
    assert [item.slug for item in lesson.items()] == ["second-choice", "first-choice"]

    # Drag and drop sends the whole order at once.
    response = client.post(move, {"order": "01-first,02-second"}, headers={"X-Requested-With": "dikkat"})
    assert response.json() == {"moved": True}
    assert "1. Birinci ders" in _outline(client)
    bad = client.post(move, {"order": "01-first,nope"}, headers={"X-Requested-With": "dikkat"})
    assert bad.status_code == 400 and "her birini bir kez" in bad.json()["error"]


@pytest.mark.django_db
def test_a_file_laid_out_too_unusually_is_left_to_its_editor(mini_course, teacher):
    path = "02-second/lesson.md"
    text = drafts.read_text(mini_course, path).replace("order = 2\n", "order = 2\norder = 5\n")
    with pytest.raises(drafts.DraftRefused, match="değişikliği dosyanın düzenleyicisinde yapın"):
        structure.with_order(path, text, 1)


@pytest.mark.django_db
def test_a_save_over_a_version_saved_since_the_editor_opened_is_refused_with_the_difference(
    client, mini_course, teacher, make_user
):
    url = reverse("studio:edit", args=["mini", "01-first/lesson.md"])
    opened = client.get(url).context
    other = make_user("diger-hoca")
    mini_course.instructors.add(other)
    drafts.save_draft(mini_course, "01-first/lesson.md", opened["text"] + "\nÖteki hocanın cümlesi.\n", other)

    mine = opened["text"] + "\nBenim cümlem.\n"
    response = client.post(url, {"text": mine, "action": "save", "version": opened["version"]})

    assert response.status_code == 409
    page = html.unescape(response.text)
    assert "Bu dosya siz açtıktan sonra değişti" in page
    assert "-Öteki hocanın cümlesi." in page and "+Benim cümlem." in page
    assert "Öteki hocanın" in drafts.read_text(mini_course, "01-first/lesson.md")  # not overwritten
    assert response.context["text"] == mine  # the refused text stays in the editor

    again = client.post(url, {"text": mine, "action": "save", "version": response.context["version"]})
    assert again.status_code == 302
    assert "Benim cümlem" in drafts.read_text(mini_course, "01-first/lesson.md")
