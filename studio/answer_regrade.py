"""Regrading students' answers after a publish changed what a question accepts.

The publish page names the questions whose answers changed (studio.impact) and offers to grade
their answers again on what each student is asked now; declining keeps every old grade. An
answer that runs no code is graded in the request, a chunk of answers per transaction; a
code blank's runs in the sandbox, so it becomes a job of the one queue
(studio.AnswerRegradeItem) that a grading worker claims under a lease. Either way the answer
keeps its old grade until its new one is stored, and storing it tells score_changed's
receivers (the LMS grade passback); a student's progress and the gradebook read the answers
themselves. The lesson pages that show the question are rendered again (their cached markup
holds the old feedback).
"""

import logging
from datetime import datetime
from itertools import batched

from django.db import transaction
from django.tasks import task
from django.utils import timezone

from courses.answer_queue import lease_duration
from courses.kinds import Grade, get_kind
from courses.models import Attempt, Course, Question, QuestionVariant
from courses.pagecache import touch_lessons
from jobs.signals import send_score_changed

from .impact import (
    answers_graded_before,
    asked_now,
    current_variants,
    grade_again,
    graded_on_earlier,
    last_change,
)
from .models import AnswerRegrade, AnswerRegradeItem

log = logging.getLogger("grader")

# Answers graded again in one transaction at most.
CHUNK = 500


def start(
    course: Course,
    questions: list[Question],
    user,
    published_at: datetime | None = None,
    publish_id: str = "",
) -> AnswerRegrade:
    """Grade again the answers of ``questions`` graded on the version the publish at
    ``published_at`` replaced (studio.impact.answers_graded_before; None: each question's last
    change, else now): those that run no code now, the others queued for a grading worker. Each chunk of answers is its own transaction
    (its answers' grades, their items and score_changed together), so a large course is never
    held in one."""
    now = timezone.now()
    regrade = AnswerRegrade.objects.create(
        course=course, created_by=user, publish_id=publish_id, created_at=now
    )
    for question in questions:
        kind = get_kind(question.kind)
        if kind is None:
            continue
        changed_at = published_at or last_change(question) or now
        ids = list(answers_graded_before(question, changed_at).values_list("pk", flat=True))
        touch = False
        for chunk in batched(ids, CHUNK):
            touch |= _regrade_chunk(regrade, question, kind, chunk)
        if touch:
            touch_lessons(Question, question)
    regrade.finished_at = timezone.now()
    AnswerRegrade.objects.filter(pk=regrade.pk).update(finished_at=regrade.finished_at)
    return regrade


@transaction.atomic
def _regrade_chunk(regrade: AnswerRegrade, question: Question, kind, ids) -> bool:
    """Grade again the answers ``ids`` of ``question``; whether anything a student sees changed."""
    now = timezone.now()
    items = []
    queued = []
    students = set()
    touch = False
    # Locked: a grading worker storing another regrade's grade compares with the answer as stored.
    attempts = (
        Attempt.objects.filter(pk__in=ids)
        .select_related("variant")
        .select_for_update(of=("self",))
        .order_by("pk")
    )
    for attempt, spec, variant in graded_on_earlier(question, attempts):
        item = AnswerRegradeItem(
            regrade=regrade,
            attempt=attempt,
            old_score=attempt.score,
            old_correct=attempt.correct,
            created_at=now,
        )
        if spec and kind.code_runs(spec):
            item.status, item.enqueued_at = AnswerRegradeItem.Status.QUEUED, now
            queued.append(item)
            continue
        grade = grade_again(kind, spec, attempt.answer)
        item.status, item.finished_at = AnswerRegradeItem.Status.DONE, now
        item.new_score, item.new_correct = grade.score, grade.correct
        items.append(item)
        scored, shown = _store(attempt, grade, variant)
        if scored:
            students.add(attempt.user_id)
        touch |= shown
    AnswerRegradeItem.objects.bulk_create(items)
    for item in AnswerRegradeItem.objects.bulk_create(queued):
        AnswerRegradeItem.objects.enqueue(item.pk, stamped=True)
    if students:
        send_score_changed(Attempt, students, question.course_id, question.lesson_id)
    return touch


def _store(attempt: Attempt, grade: Grade, variant: QuestionVariant | None) -> tuple[bool, bool]:
    """Write ``grade`` to the answer (asked now as ``variant``, when the question has variants);
    (whether its score changed, whether anything its student sees changed)."""
    fields = {
        "score": grade.score,
        "correct": grade.correct,
        "feedback": grade.feedback,
        "misconceptions": grade.misconceptions,
    }
    if variant is not None:
        fields["variant"] = variant
    scored = abs(grade.score - attempt.score) > 1e-9 or grade.correct != attempt.correct
    shown = any(getattr(attempt, name) != value for name, value in fields.items())
    if shown:
        Attempt.objects.filter(pk=attempt.pk).update(**fields)
    return scored, shown


@task(queue_name="default", priority=-50)
def regrade_answer(item_id: int) -> str:
    """Grade one queued answer again in the sandbox and store its new grade (if the lease still
    holds); the grader's own failure keeps the old grade."""
    taken = AnswerRegradeItem.objects.select_related("attempt__question", "attempt__variant").take(
        item_id, lambda item: lease_duration(item.attempt.question)
    )
    if taken is None:
        return "skipped"
    item, token = taken
    attempt = item.attempt
    question = attempt.question
    asked = asked_now(question, attempt, current_variants(question))
    try:
        kind = get_kind(question.kind)
        if kind is None:
            raise LookupError(f"no question kind {question.kind!r}")
        if asked is None:  # graded on today's question meanwhile: nothing to grade again
            grade, variant = (
                Grade(attempt.score, attempt.correct, attempt.feedback, attempt.misconceptions),
                None,
            )
        else:
            grade, variant = grade_again(kind, asked[0], attempt.answer), asked[1]
    except Exception as exc:  # the grader's fault (sandbox unavailable, a bug): the old grade stays
        log.exception("regrading answer %s failed", attempt.pk)
        return "failed" if AnswerRegradeItem.objects.give_up(item_id, token, repr(exc)) else "stale"
    with transaction.atomic():
        if not AnswerRegradeItem.objects.finish(
            item_id, token, new_score=grade.score, new_correct=grade.correct
        ):
            return "stale"
        # Compared with the answer as it is now (another regrade may have stored a grade meanwhile).
        attempt = Attempt.objects.select_for_update(of=("self",)).select_related("variant").get(pk=attempt.pk)
        scored, shown = _store(attempt, grade, variant)
        if scored:
            send_score_changed(Attempt, [attempt.user_id], question.course_id, question.lesson_id)
        if shown:
            touch_lessons(Question, question)
    return "correct" if grade.correct else "wrong"
