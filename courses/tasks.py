from django.tasks import task

from .answer_queue import grade_claimed


@task(queue_name="default")
def grade_attempt(attempt_id: int) -> str:
    """Grade one queued answer (fill-in code blanks) in the sandbox; idempotent."""
    return grade_claimed(attempt_id)
