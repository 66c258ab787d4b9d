from django.tasks import task

from .grading import grade_claimed


@task(queue_name="default")
def grade_submission(submission_id: int) -> str:
    """Grade one submission; idempotent (a claimed or graded submission is skipped)."""
    return grade_claimed(submission_id)


@task(queue_name="default")
def regrade_item(item_id: int) -> str:
    """Grade one submission again into a regrade preview; idempotent."""
    from .regrade import grade_item

    return grade_item(item_id)


@task(queue_name="default")
def check_item(check_id: int) -> str:
    """Grade an exercise's reference and its catalogued variants for its instructors."""
    from .itemcheck import run

    return run(check_id)
