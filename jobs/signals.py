"""Signals the work's modules send; the modules above them connect to them (the layers point
down, so a score change reaches the LTI grade outbox through a signal, never an import)."""

from django.dispatch import Signal

# A graded result that counts for students' scores was stored (a graded answer or submission,
# a reveal, a regrade applied, a hand-in, a manual score). Sent inside the storing transaction
# with ``user_ids`` (the students whose scores may have changed), ``course_id`` and
# ``lesson_id`` (None when the change is not one lesson's, e.g. an assessment's manual score).
# Receivers that do work wait for the commit themselves (transaction.on_commit).
score_changed = Signal()


def send_score_changed(sender: type, user_ids, course_id: int, lesson_id: int | None = None) -> None:
    """Tell receivers that the scores of ``user_ids`` in ``course_id`` may have changed."""
    ids = sorted({int(user_id) for user_id in user_ids})
    if ids:
        score_changed.send(sender=sender, user_ids=ids, course_id=course_id, lesson_id=lesson_id)
