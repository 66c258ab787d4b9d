"""The student's side of questions: state per item, answering, revealing.

Kept apart from the views so the web and `manage.py answer` grade exactly the same way.
"""

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from jobs.signals import send_score_changed

from . import answer_queue
from .kinds import AnswerError, Grade, get_kind
from .models import Attempt, Course, Enrollment, Question
from .reveal import may_reveal


@dataclass
class QuestionState:
    question: Question
    attempts: list[Attempt] = field(default_factory=list)
    # Answers handed in to an assessment that keeps its feedback back: they use attempts, but
    # nothing of them is shown here (assessments.feedback.held_back).
    held: list[Attempt] = field(default_factory=list)

    @property
    def answers(self) -> list[Attempt]:
        """Answers that count as attempts: graded or still being graded (not the grader's failures)."""
        return [
            a
            for a in self.attempts + self.held
            if a.kind == Attempt.Kind.ANSWER and a.status != Attempt.Status.FAILED
        ]

    @property
    def shown_answers(self) -> list[Attempt]:
        return [a for a in self.answers if a not in self.held]

    @property
    def pending(self) -> Attempt | None:
        """An answer still waiting for the sandbox, if any."""
        return next((a for a in self.attempts if a.kind == Attempt.Kind.ANSWER and a.is_pending), None)

    @property
    def answer_count(self) -> int:
        return len(self.answers)

    @property
    def last_answer(self) -> Attempt | None:
        """The latest answer, including one the grader failed on (its message shows)."""
        answers = [a for a in self.attempts if a.kind == Attempt.Kind.ANSWER]
        return answers[-1] if answers else None

    @property
    def revealed(self) -> bool:
        return any(a.kind == Attempt.Kind.REVEAL for a in self.attempts)

    @property
    def solved(self) -> bool:
        return any(a.correct and not a.after_reveal for a in self.shown_answers)

    @property
    def attempts_left(self) -> int | None:
        limit = self.question.max_attempts
        return None if limit is None else max(0, limit - self.answer_count)

    @property
    def can_answer(self) -> bool:
        return self.attempts_left != 0

    @property
    def can_reveal(self) -> bool:
        return not self.revealed and may_reveal(
            self.question.reveal, attempts=self.answer_count, solved=self.solved
        )

    def score(self, policy: str) -> float | None:
        """The item's score under the course's policy; None before any graded answer."""
        scored = [a for a in self.attempts if a.status == Attempt.Status.DONE]
        if not scored:
            return None
        if policy == Course.ScorePolicy.LAST:
            return scored[-1].score
        return max(a.score for a in scored)

    def score_after_reveal(self, policy: str) -> float:
        """The item's score once the answer is shown: the reveal itself counts as a 0 and
        answers after it score 0, so only the best earned so far can remain (policy "best")."""
        if policy == Course.ScorePolicy.LAST:
            return 0.0
        return self.score(policy) or 0.0

    def reveal_costs(self, policy: str) -> bool:
        """Whether showing the answer now takes something away: points, or the chance to earn them."""
        return self.score_after_reveal(policy) < 1.0

    @property
    def status(self) -> str:
        if self.solved:
            return "solved"
        if self.revealed:
            return "revealed"
        return "tried" if self.answers else "new"


def states_for(user, questions, hidden: Collection[int] = ()) -> dict[int, QuestionState]:
    """Each question's state for ``user``; the answers in ``hidden`` are left out (work handed in
    to an assessment that keeps its feedback back: the lesson must not show it)."""
    states = {q.pk: QuestionState(q) for q in questions}
    if user.is_authenticated and states:
        attempts = Attempt.objects.filter(user=user, question__in=list(states))
        for attempt in attempts.order_by("created_at", "pk"):
            state = states[attempt.question_id]
            (state.held if attempt.pk in hidden else state.attempts).append(attempt)
    return states


class AnswerRefused(Exception):
    """The student may not answer now (no attempts left); nothing is stored."""


class AnswerPending(Exception):
    """The previous answer to this question is still being graded; nothing is stored."""


class AnsweringTooFast(Exception):
    """Too many answers in a short time (code blanks start a sandbox each); retry later."""

    def __init__(self, retry_after: int):
        super().__init__(retry_after)
        self.retry_after = retry_after


def grade_answer(question: Question, raw_answer) -> tuple[dict, Grade]:
    """Clean and grade an answer without storing it (raises AnswerError / NotGradable)."""
    kind = get_kind(question.kind)
    if kind is None:
        raise AnswerError(f"unknown question kind {question.kind!r}")
    answer = kind.clean_answer(question.spec, raw_answer)
    return answer, kind.grade(question.spec, answer)


def question_changed(question: Question, asked: str) -> bool:
    """Whether a form's ``asked`` (the start of the digest of the variant its page showed) is not
    the variant the question asks this student now (a re-import changed it). A form without
    it is taken as asking today's question."""
    if not asked:
        return False
    variant = question.asked_variant
    return variant is None or not variant.digest.startswith(asked)


def submit_answer(user, question: Question, raw_answer) -> Attempt:
    """Store one answer: graded at once, or, when grading runs code, queued for a grading
    worker (the sandbox never runs in the web request). Grading happens before the row lock.
    A question with variants is graded on the student's own, which the attempt keeps."""
    if question.asked_variant is None:
        question.ask_for(user)
    state = states_for(user, [question])[question.pk]
    if not state.can_answer:
        raise AnswerRefused()  # before grading: a used-up question never starts a sandbox
    if state.pending:
        raise AnswerPending()
    window = timedelta(seconds=60)
    recent = list(
        Attempt.objects.filter(user=user, created_at__gte=timezone.now() - window)
        .order_by("created_at")
        .values_list("created_at", flat=True)[: settings.ANSWER_RATE_LIMIT]
    )
    if len(recent) >= settings.ANSWER_RATE_LIMIT:
        raise AnsweringTooFast(int((recent[0] + window - timezone.now()).total_seconds()) + 1)
    kind = get_kind(question.kind)
    if kind is None:
        raise AnswerError(f"unknown question kind {question.kind!r}")
    answer = kind.clean_answer(question.spec, raw_answer)  # NotGradable: explained, not counted
    queued = kind.code_runs(question.spec) > 0
    grade = None if queued else kind.grade(question.spec, answer)
    with transaction.atomic():
        # Lock the student's enrolment so concurrent answers cannot exceed max_attempts.
        Enrollment.objects.select_for_update().filter(user=user, course_id=question.course_id).first()
        state = states_for(user, [question])[question.pk]
        if not state.can_answer:
            raise AnswerRefused()
        if state.pending:
            raise AnswerPending()
        after_reveal = state.revealed
        if (
            queued
            and Attempt.objects.filter(
                user=user, status__in=[Attempt.Status.QUEUED, Attempt.Status.RUNNING]
            ).count()
            >= settings.GRADING_MAX_PENDING
        ):
            raise AnswerPending()  # as for exercise code: a few waiting at a time per student
        if queued:
            attempt = Attempt.objects.create(
                user=user,
                question=question,
                variant=question.asked_variant,
                kind=Attempt.Kind.ANSWER,
                answer=answer,
                after_reveal=after_reveal,
                status=Attempt.Status.QUEUED,
                enqueued_at=timezone.now(),
            )
            transaction.on_commit(lambda: answer_queue.enqueue(attempt.pk, stamped=True))
            return attempt
        assert grade is not None  # graded above when no code runs
        send_score_changed(Attempt, [user.pk], question.course_id, question.lesson_id)
        return Attempt.objects.create(
            user=user,
            question=question,
            variant=question.asked_variant,
            kind=Attempt.Kind.ANSWER,
            answer=answer,
            score=0.0 if after_reveal else grade.score,
            correct=grade.correct,
            after_reveal=after_reveal,
            feedback=grade.feedback,
            misconceptions=grade.misconceptions,
        )


def reveal_answer(user, question: Question) -> Attempt | None:
    """Record a reveal if the question's rule allows it now; None when it does not."""
    with transaction.atomic():
        Enrollment.objects.select_for_update().filter(user=user, course_id=question.course_id).first()
        state = states_for(user, [question])[question.pk]
        if state.revealed:
            return next(a for a in state.attempts if a.kind == Attempt.Kind.REVEAL)
        if not state.can_reveal:
            return None
        send_score_changed(Attempt, [user.pk], question.course_id, question.lesson_id)
        return Attempt.objects.create(user=user, question=question, kind=Attempt.Kind.REVEAL, score=0.0)


def reveal_warning(question: Question, state: QuestionState) -> str:
    """What showing the answer now does to the score, said before it is done; "" when it
    changes nothing (a solved question under the "best" policy keeps its full score)."""
    policy = question.course.score_policy
    if not state.reveal_costs(policy):
        return ""
    current, after = state.score(policy) or 0.0, state.score_after_reveal(policy)
    if after > 0:
        return _(
            "After you see the answer, this question keeps its score of %(score)s, "
            "and answers you give after it score 0."
        ) % {"score": number_format(after, 2)}
    if current > 0:
        return _(
            "Seeing the answer sets this question's score from %(score)s to 0 (the last answer counts), "
            "and answers you give after it score 0."
        ) % {"score": number_format(current, 2)}
    return _("If you see the answer now, this question scores 0, and answers you give after it score 0 too.")


def item_context(question: Question, state: QuestionState, user, *, confirm_reveal: bool = False) -> dict:
    """Everything the question templates need; the solution only once revealed.
    ``confirm_reveal``: the student asked to see the answer and must confirm what it costs."""
    kind = get_kind(question.kind)
    assert kind is not None  # the import refuses unknown kinds
    last = state.last_answer
    warning = reveal_warning(question, state) if state.can_reveal else ""
    return {
        "reveal_warning": warning,
        "confirm_reveal": confirm_reveal and bool(warning),
        "question": question,
        "state": state,
        "kind_context": kind.context(question.spec, (user.pk, question.course_id, question.slug)),
        "last": last,
        "feedback_items": _feedback_items(kind, question, last, final=state.revealed or not state.can_answer),
        "solution_items": kind.solution_items(question.spec) if state.revealed else [],
    }


def _feedback_items(kind, question: Question, last: Attempt | None, final: bool = True) -> list[dict]:
    if last is None:
        return []
    # Said about the variant it was graded on (a later import may have changed the student's).
    asked = question.asked_variant
    spec = (
        question.spec
        if last.variant_id is None or (asked and asked.pk == last.variant_id) or last.variant is None
        else last.variant.spec
    )
    try:
        if not final and (withheld := kind.withheld_feedback(spec, last.answer, last.feedback)) is not None:
            return withheld
        return kind.feedback_items(spec, last.answer, last.feedback)
    except (KeyError, IndexError, TypeError, StopIteration):
        # The question changed since this answer (another kind, fewer blanks…): the
        # verdict still shows, the per-part notes of the old answer do not.
        return []
