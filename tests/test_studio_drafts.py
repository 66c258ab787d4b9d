"""Drafts in the browser authoring area: file overlays over the course's stored files that
students never see, published through the same checks and queued import as an upload, each
publish a revision with a readable diff that can be reverted."""

import pytest

from courses.exporter import export_course, store_files
from courses.models import Attempt, Course, Enrollment
from studio import drafts
from studio.drafts import DRAFT, PUBLISHED

LESSON = "01-first/lesson.md"


def _published_body(slug: str = "first") -> str:
    return Course.objects.get(slug="mini").lessons.get(slug=slug).body_source


@pytest.fixture
def teacher(mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    return user


@pytest.fixture
def student(client, mini_course, alice):
    Enrollment.objects.create(user=alice, course=mini_course)
    client.force_login(alice)
    return client


def _edit(course, teacher, old: str, new: str, path: str = LESSON):
    text = drafts.read_text(course, path)
    assert old in text
    return drafts.save_draft(course, path, text.replace(old, new), teacher)


@pytest.mark.django_db
def test_a_draft_is_invisible_to_students_until_it_is_published(mini_course, teacher, student):
    _edit(mini_course, teacher, "Skor $QK^T$ ile hesaplanır", "Taslak cümle $a^2$")
    assert drafts.file_states(mini_course)[LESSON] == DRAFT
    assert drafts.file_states(mini_course)["course.toml"] == PUBLISHED
    assert "Taslak cümle" in drafts.read_text(mini_course, LESSON)
    assert "Taslak cümle" not in _published_body()
    assert "Taslak cümle" not in student.get("/kurs/mini/first/").text


@pytest.mark.django_db
def test_a_draft_equal_to_the_published_file_is_no_draft(mini_course, teacher):
    text = drafts.read_text(mini_course, LESSON)
    _edit(mini_course, teacher, "Skor", "Puan")
    assert drafts.save_draft(mini_course, LESSON, text.replace("\n", "\r\n"), teacher) is None
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_a_path_outside_the_course_or_of_another_kind_is_refused(mini_course, teacher):
    for path in ("../evil.md", "/etc/passwd.txt", "01-first/.hidden.md", "01-first/a b.md", "x.sh"):
        with pytest.raises(drafts.DraftRefused):
            drafts.save_draft(mini_course, path, "x", teacher)
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db(transaction=True)
def test_a_publish_with_a_problem_publishes_nothing_and_names_the_file_and_line(
    mini_course, teacher, run_queue
):
    _edit(mini_course, teacher, "Skor $QK^T$", "Yeni metin")  # a good edit in the same publish
    broken = drafts.read_text(mini_course, "01-first/questions.toml").replace(
        'kind = "single_choice"', 'kind = "single_choice'
    )
    drafts.save_draft(mini_course, "01-first/questions.toml", broken, teacher)
    files_before = export_course(mini_course)

    outcome = drafts.publish(mini_course, teacher)

    assert outcome.result_id == ""
    assert [(p.file, p.line) for p in outcome.problems] == [("01-first/questions.toml", 3)]
    run_queue()
    assert export_course(mini_course) == files_before
    assert "Yeni metin" not in _published_body()
    assert mini_course.draft_files.count() == 2  # the drafts stay, to be corrected
    assert not mini_course.revisions.exists()


@pytest.mark.django_db(transaction=True)
def test_a_good_publish_changes_the_lesson_for_students_and_keeps_their_attempts(
    mini_course, teacher, student, run_queue
):
    question = mini_course.questions.get(slug="first-choice")
    attempt = Attempt.objects.create(
        user=Enrollment.objects.get().user, question=question, answer={"choice": 0}, status="done"
    )
    _edit(mini_course, teacher, "Skor $QK^T$ ile hesaplanır", "Skor $QK^\\top$ ile bulunur")

    outcome = drafts.publish(mini_course, teacher, summary="Daha açık")
    assert outcome.problems == [] and outcome.result_id
    run_queue()

    page = student.get("/kurs/mini/first/").text
    assert "ile bulunur" in page and "<math" in page
    assert not mini_course.draft_files.exists()
    question.refresh_from_db()
    assert not question.retired and Attempt.objects.get(pk=attempt.pk).question_id == question.pk
    revision = mini_course.revisions.get()
    assert (revision.number, revision.author, revision.summary) == (1, teacher, "Daha açık")
    [(path, diff)] = revision.diffs()
    assert path == LESSON
    assert ("remove", "-Skor $QK^T$ ile hesaplanır:") in diff
    assert ("add", "+Skor $QK^\\top$ ile bulunur:") in diff


@pytest.mark.django_db(transaction=True)
def test_publishing_one_lesson_leaves_the_other_lessons_drafts(mini_course, teacher, run_queue):
    _edit(mini_course, teacher, "Skor $QK^T$", "Birinci değişti")
    second = "02-second/lesson.md"
    drafts.save_draft(mini_course, second, drafts.read_text(mini_course, second) + "\nEk.\n", teacher)

    assert drafts.publish(mini_course, teacher, only="01-first").result_id
    run_queue()

    assert "Birinci değişti" in _published_body()
    assert list(mini_course.draft_files.values_list("path", flat=True)) == [second]


@pytest.mark.django_db(transaction=True)
def test_revert_brings_back_an_earlier_revision_as_a_new_revision(mini_course, teacher, run_queue):
    original = drafts.read_text(mini_course, LESSON)
    _edit(mini_course, teacher, "Skor $QK^T$", "Birinci sürüm")
    drafts.publish(mini_course, teacher)
    run_queue()
    _edit(mini_course, teacher, "Birinci sürüm", "İkinci sürüm")
    drafts.publish(mini_course, teacher)
    run_queue()
    assert "İkinci sürüm" in _published_body()

    first = mini_course.revisions.get(number=1)
    assert drafts.revert(mini_course, first, teacher).result_id
    run_queue()

    assert "Birinci sürüm" in _published_body()
    assert list(mini_course.revisions.values_list("number", flat=True)) == [3, 2, 1]
    assert mini_course.revisions.get(number=3).files == first.files
    assert original != drafts.read_text(mini_course, LESSON)


@pytest.mark.django_db(transaction=True)
def test_a_row_edited_in_the_admin_is_not_overwritten_silently(mini_course, teacher, run_queue):
    mini_course.lessons.filter(slug="second").update(title="Elle değişti")
    _edit(mini_course, teacher, "Skor $QK^T$", "Yeni")

    result_id = drafts.publish(mini_course, teacher).result_id
    run_queue()

    outcome = drafts.publish_files.get_result(result_id).return_value
    assert not outcome["imported"] and any("second" in p for p in outcome["problems"])
    assert "Yeni" not in _published_body() and mini_course.draft_files.exists()
    drafts.publish(mini_course, teacher, force=True)
    run_queue()
    assert "Yeni" in _published_body() and not mini_course.draft_files.exists()


@pytest.mark.django_db(transaction=True)
def test_a_revision_whose_files_an_upload_changed_since_is_not_restored_half(mini_course, teacher, run_queue):
    _edit(mini_course, teacher, "Skor $QK^T$", "Birinci sürüm")
    drafts.publish(mini_course, teacher)
    run_queue()
    # An upload (not the studio) changes another file: its earlier text is kept nowhere.
    files = export_course(mini_course)
    files["02-second/lesson.md"] += "\nYüklemeyle geldi.\n".encode()
    store_files(mini_course, files)

    outcome = drafts.revert(mini_course, mini_course.revisions.get(), teacher)

    assert [p.file for p in outcome.problems] == ["02-second/lesson.md"]
    assert "geri getirilemez" in outcome.problems[0].message
    assert not mini_course.draft_files.exists() and outcome.result_id == ""


@pytest.mark.django_db(transaction=True)
def test_a_publish_whose_revision_cannot_be_recorded_publishes_nothing(
    mini_course, teacher, run_queue, monkeypatch
):
    # Publishing and its revision are one transaction: no change students see without its record.
    _edit(mini_course, teacher, "Skor $QK^T$ ile hesaplanır", "Skor başka türlü hesaplanır")

    def broken(*args, **kwargs):
        raise RuntimeError("the revision could not be stored")

    monkeypatch.setattr(drafts, "_record", broken)
    drafts.publish(mini_course, teacher)
    run_queue()
    assert "başka türlü" not in _published_body()
    assert not mini_course.revisions.exists() and mini_course.draft_files.exists()
    monkeypatch.undo()
    drafts.publish(mini_course, teacher)
    run_queue()
    assert "başka türlü" in _published_body() and mini_course.revisions.count() == 1
