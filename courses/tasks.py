from django.tasks import task

from .answer_queue import grade_claimed


@task(queue_name="default")
def grade_attempt(attempt_id: int, preview: bool = False) -> str:
    """Grade one queued answer (fill-in code blanks) in the sandbox; idempotent. ``preview``: an
    instructor's unrecorded preview answer."""
    return grade_claimed(attempt_id, preview)
