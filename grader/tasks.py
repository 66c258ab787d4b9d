from django.tasks import task

from .grading import grade_claimed


@task(queue_name="default")
def grade_submission(submission_id: int) -> str:
    """Grade one submission; idempotent (a claimed or graded submission is skipped)."""
    return grade_claimed(submission_id)
