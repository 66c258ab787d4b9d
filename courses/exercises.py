"""The bridge from exercise folders to the grader: check specs, build hidden grading data."""

from .authoring import CourseSource, Problem


def check_exercises(source: CourseSource, *, build: bool) -> list[Problem]:
    """Problems with the course's exercises; with ``build``, also store their grading data.

    Filled in by the grader integration: until then exercises are checked for their files only.
    """
    return []
