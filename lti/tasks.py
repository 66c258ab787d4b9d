"""The LTI app's tasks: sending one grade outbox row (its model names it: ``task_path``), and
noting scores again when work an assessment held back is shown."""

from django.tasks import task

from .passback import note_changes, send_claimed


@task(queue_name="default")
def send_score(row_id: int) -> str:
    """Send one score to its LMS (idempotent: a row that is not queued any more is skipped)."""
    sent = send_claimed(row_id)
    if sent.again_at is not None:
        note_again.using(run_after=sent.again_at).enqueue(sent.user_id, sent.course_id)
    return sent.outcome


@task(queue_name="default")
def note_again(user_id: int, course_id: int) -> int:
    """An assessment now shows work it held back: the student's LMS scores are noted again."""
    return note_changes([user_id], course_id, None)
