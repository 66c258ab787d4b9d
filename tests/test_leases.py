"""A queue lease outlasts the runs it covers: start-up budget plus wall limit for every run."""

import pytest

from courses.answer_queue import lease_duration as answer_lease
from courses.kinds import get_kind
from courses.kinds.fill_in import FILL_IN_LIMITS
from courses.models import Exercise, Question
from grader.core import Limits, parse_spec
from grader.core.sandbox import STARTUP_BUDGET
from grader.grading import lease_duration as submission_lease


@pytest.fixture
def course(db):
    from courses.importer import import_course

    import_course("courses/content/attention")


def test_every_exercise_lease_covers_the_start_up_budget_and_the_wall_limit(course):
    exercises = list(Exercise.objects.all())
    assert len(exercises) >= 10
    for exercise in exercises:
        wall = parse_spec(exercise.spec).limits.wall_seconds
        assert submission_lease(exercise).total_seconds() >= STARTUP_BUDGET + wall, exercise.slug


def test_every_code_blank_lease_covers_each_of_its_runs(course):
    wall = Limits(**FILL_IN_LIMITS).wall_seconds
    questions = [q for q in Question.objects.filter(kind="fill_in") if get_kind(q.kind).code_runs(q.spec)]
    assert questions, "the course has code fill-in questions"
    for question in questions:
        runs = get_kind(question.kind).code_runs(question.spec)
        assert answer_lease(question).total_seconds() >= runs * (STARTUP_BUDGET + wall), question.slug
