"""The grader's tasks: each takes one job's primary key and runs it (idempotent: a job that is
not queued any more is skipped). The job models name them (``task_path``)."""

from django.tasks import task

from .grading import grade_claimed
from .itemcheck import run as run_item_check
from .regrade import grade_item


@task(queue_name="default")
def grade_submission(submission_id: int) -> str:
    """Grade one submission."""
    return grade_claimed(submission_id)


@task(queue_name="default")
def regrade_item(item_id: int) -> str:
    """Grade one submission again into a regrade preview."""
    return grade_item(item_id)


@task(queue_name="default")
def check_item(check_id: int) -> str:
    """Grade an exercise's reference and its catalogued variants for its instructors."""
    return run_item_check(check_id)
