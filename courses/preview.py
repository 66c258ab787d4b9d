"""An instructor's answers in the student preview of a lesson: graded exactly like a student's,
never recorded.

A preview answer is stored as an AnswerPreview, which no gradebook, statistic or progress
reads. Code blanks go through the grading queue like every other answer (a worker grades
them; no sandbox runs in a web request), and the page polls it like a student's answer.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import answer_queue
from .kinds import AnswerError, get_kind
from .models import AnswerPreview, Question
from .selftest import AnsweringTooFast, AnswerPending


def preview_answer(user, question: Question, raw_answer) -> AnswerPreview:
    """Grade an instructor's answer without recording it: at once, or, when grading runs code,
    queued for a grading worker. Limited like students' answers (a minute's rate, one waiting
    per question, a few waiting at a time); raises AnswerError, NotGradable, AnswerPending and
    AnsweringTooFast as submit_answer does."""
    kind = get_kind(question.kind)
    if kind is None:
        raise AnswerError(f"unknown question kind {question.kind!r}")
    if question.asked_variant is None:
        question.ask_for(user)  # the instructor's own variant, as their preview of the lesson shows
    answer = kind.clean_answer(question.spec, raw_answer)  # NotGradable: explained, nothing stored
    mine = AnswerPreview.objects.filter(user=user)
    now = timezone.now()
    window = timedelta(seconds=60)
    recent = list(
        mine.filter(created_at__gte=now - window)
        .order_by("created_at")
        .values_list("created_at", flat=True)[: settings.ANSWER_RATE_LIMIT]
    )
    if len(recent) >= settings.ANSWER_RATE_LIMIT:
        raise AnsweringTooFast(int((recent[0] + window - now).total_seconds()) + 1)
    if not kind.code_runs(question.spec):
        grade = kind.grade(question.spec, answer)
        return AnswerPreview.objects.create(
            user=user,
            question=question,
            variant=question.asked_variant,
            answer=answer,
            score=grade.score,
            correct=grade.correct,
            feedback=grade.feedback,
            misconceptions=grade.misconceptions,
        )
    waiting = mine.filter(status__in=[AnswerPreview.Status.QUEUED, AnswerPreview.Status.RUNNING])
    if waiting.filter(question=question).exists() or waiting.count() >= settings.GRADING_MAX_PENDING:
        raise AnswerPending()
    with transaction.atomic():
        preview = AnswerPreview.objects.create(
            user=user,
            question=question,
            variant=question.asked_variant,
            answer=answer,
            status=AnswerPreview.Status.QUEUED,
            enqueued_at=now,
        )
        transaction.on_commit(lambda: answer_queue.enqueue(preview.pk, stamped=True, preview=True))
    return preview
