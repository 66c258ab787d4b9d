"""An import that adds or retires a scored item changes what students' lesson and course scores
are out of: it tells score_changed (LTI grade passback sends the new scores); an import that
changes nothing scored stays quiet."""

import pytest

from courses.importer import import_course
from jobs.signals import score_changed

pytestmark = pytest.mark.django_db


@pytest.fixture
def heard():
    calls = []

    def receiver(sender, user_ids, course_id, lesson_id=None, **kwargs):
        calls.append((user_ids, course_id, lesson_id))

    score_changed.connect(receiver, dispatch_uid="test-import-score-changed")
    yield calls
    score_changed.disconnect(dispatch_uid="test-import-score-changed")


def test_a_new_question_tells_the_enrolled_students_scores_changed(
    mini_course, mini_course_dir, alice, heard
):
    mini_course.enroll(alice)
    import_course(mini_course_dir)  # the same files again: nothing scored changed
    assert heard == []
    questions = mini_course_dir / "01-first" / "questions.toml"
    text = questions.read_text(encoding="utf-8")
    questions.write_text(text + "\n" + text.replace('"first-choice"', '"second-choice"'), encoding="utf-8")
    import_course(mini_course_dir)
    assert heard == [([alice.pk], mini_course.pk, None)]


def test_a_retired_question_tells_it_too(mini_course, mini_course_dir, alice, heard):
    mini_course.enroll(alice)
    questions = mini_course_dir / "01-first" / "questions.toml"
    questions.write_text("", encoding="utf-8")
    import_course(mini_course_dir)
    assert heard == [([alice.pk], mini_course.pk, None)]


def test_a_question_moved_to_another_lesson_tells_it_too(mini_course, mini_course_dir, alice, heard):
    mini_course.enroll(alice)
    first = mini_course_dir / "01-first" / "questions.toml"
    (mini_course_dir / "02-second" / "questions.toml").write_text(
        first.read_text(encoding="utf-8"), encoding="utf-8"
    )
    first.write_text("", encoding="utf-8")
    report = import_course(mini_course_dir)
    assert any(line.startswith("~ question first-choice (changed: lesson") for line in report.changes)
    assert heard == [([alice.pk], mini_course.pk, None)]
