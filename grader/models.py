"""Submissions of exercise code and their grades; the grading itself lives in grader.core."""

import hashlib
import math
import statistics
import time
from datetime import timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from courses.models import Attempt
from jobs.models import Job
from jobs.queue import JobQuerySet

from .core import Message, parse_spec
from .core import Verdict as CoreVerdict
from .core.sandbox import max_run_seconds

VERDICT_LABELS = {
    CoreVerdict.PASSED: _("passed"),
    CoreVerdict.FAILED: _("failed"),
    CoreVerdict.ERROR: _("error"),
    CoreVerdict.TIMEOUT: _("time limit"),
    CoreVerdict.MEMORY_LIMIT: _("memory limit"),
    CoreVerdict.OUTPUT_LIMIT: _("output limit"),
    CoreVerdict.REJECTED: _("rejected"),
    CoreVerdict.INTERNAL_ERROR: _("internal error"),
}
# The grader core's verdicts, as database choices with their labels: one list of verdicts.
Verdict = models.TextChoices("Verdict", [(v.name, (v.value, VERDICT_LABELS[v])) for v in CoreVerdict])  # type: ignore[call-overload]  # the stubs know no labelled functional form
# ... and one rule for what uses up an attempt (grader.core.Verdict.counts_as_attempt).
NOT_COUNTED = [v.value for v in CoreVerdict if not v.counts_as_attempt]


class SubmissionQuerySet(JobQuerySet):
    def counted(self):
        """Submissions that count as attempts (graded on hidden cases, not rejected)."""
        return self.filter(mode=Submission.Mode.SUBMIT, status=Submission.Status.DONE, preview=False).exclude(
            verdict__in=NOT_COUNTED
        )


class Submission(Job):
    """Code a student sent, graded by a worker through the queue (a job: jobs.models.Job).
    The grader's own failure ends it as failed with the verdict internal_error."""

    task_path = "grader.tasks.grade_submission"

    class Mode(models.TextChoices):
        RUN = "run", _("run on the examples")
        SUBMIT = "submit", _("submitted")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="submissions",
        verbose_name=_("student"),
    )
    # An instructor trying the exercise in the student preview: graded like any code, never
    # counted (attempts, gradebook, statistics, regrades, progress).
    preview = models.BooleanField(_("instructor preview"), default=False)
    # Student work outlives content: a retired exercise keeps its submissions; deleting one is refused.
    exercise = models.ForeignKey(
        "courses.Exercise", on_delete=models.PROTECT, related_name="submissions", verbose_name=_("exercise")
    )
    mode = models.CharField(_("mode"), max_length=8, choices=Mode, default=Mode.SUBMIT)
    code = models.TextField(_("code"))
    code_hash = models.CharField(_("code hash"), max_length=64, db_index=True)
    verdict = models.CharField(_("verdict"), max_length=16, choices=Verdict, blank=True)
    score = models.FloatField(_("score"), null=True, blank=True)
    # Per-case results as {"name", "passed", "hidden", "message": {"msgid", "params"} | None}.
    tests = models.JSONField(_("tests"), default=list, blank=True)
    message = models.JSONField(_("message"), null=True, blank=True)
    stdout = models.TextField(_("output"), blank=True)
    misconception = models.CharField(_("misconception"), max_length=64, blank=True)
    # Sent after the student chose to see the sample solution: kept, but scores 0.
    after_reveal = models.BooleanField(_("after the sample solution"), default=False)
    duration_ms = models.PositiveIntegerField(_("grading time (ms)"), null=True, blank=True)
    graded_hash = models.CharField(_("graded against"), max_length=64, blank=True)
    # The student's variant of the exercise (its hidden cases come from the variant's seed).
    variant = models.PositiveSmallIntegerField(_("variant"), default=0)
    variant_seed = models.BigIntegerField(_("variant seed"), null=True, blank=True)
    created_at = models.DateTimeField(_("submitted"), default=timezone.now, db_index=True)

    # django-stubs types a manager as a class variable, so narrowing it is an "override".
    objects = SubmissionQuerySet.as_manager()  # type: ignore[misc]

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["user", "exercise", "-created_at"]),
            models.Index(fields=["status", "lease_expires_at"]),
        ]
        verbose_name = _("submission")
        verbose_name_plural = _("submissions")

    def __str__(self) -> str:
        return f"#{self.pk} {self.exercise.slug} · {self.user} · {self.verdict or self.status}"

    @staticmethod
    def hash_code(code: str) -> str:
        return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()

    @classmethod
    def given_up_fields(cls, tries: int) -> dict:
        message = Message(
            gettext_noop(
                "Grading stopped after %(tries)d tries: the grader's worker died each time. Your code was kept and does not count as an attempt."
            ),
            {"tries": tries},
        )
        return {"verdict": Verdict.INTERNAL_ERROR, "score": 0.0, "message": message.to_dict()}

    @property
    def progress(self) -> str:
        """queued, running or done: what a page's status poll waits on. A grading the grader
        gave up on (failed) is done for the page; its verdict says what happened."""
        return self.Status.DONE if self.status == self.Status.FAILED else self.status

    def queue_position(self) -> int | None:
        """1 for the next to be graded; None once running or done (counted once per object)."""
        if self.status != self.Status.QUEUED:
            return None
        if getattr(self, "_position", None) is None:
            ahead = Submission.objects.filter(status=self.Status.QUEUED).filter(
                Q(created_at__lt=self.created_at) | Q(created_at=self.created_at, pk__lt=self.pk)
            )
            # Code fill-in answers share the workers and the queue.
            answers = Attempt.objects.filter(status=Attempt.Status.QUEUED, created_at__lt=self.created_at)
            self._position = ahead.count() + answers.count() + 1
        return self._position

    def queue_wait_seconds(self) -> int | None:
        """About how long until a queued submission's verdict: the grades ahead of it at the
        recent pace, then its own; None when nobody is grading."""
        position = self.queue_position()
        pace = grading_pace()
        if position is None or pace is None:
            return None
        return max(1, math.ceil((position - 1) * pace.seconds_between + pace.seconds_each))

    def poll_after_ms(self) -> int | None:
        """When a status poll is next worth making: near the expected verdict, not sooner."""
        if self.status == self.Status.QUEUED:
            wait = self.queue_wait_seconds()
            return None if wait is None else min(10_000, wait * 1000)
        pace = grading_pace()
        if self.status == self.Status.RUNNING and pace is not None and self.started_at is not None:
            left = pace.seconds_each - (timezone.now() - self.started_at).total_seconds()
            if left > 0:
                return int(min(10.0, max(0.3, left)) * 1000)
        return None  # overdue or unknown: the page's own back-off (up to 3 s) applies

    def rendered_tests(self) -> list[dict]:
        return [{**test, "message": render_message(test.get("message"))} for test in self.tests]

    def rendered_message(self) -> str:
        return render_message(self.message)

    @property
    def message_context(self) -> str:
        """The lines of code a message points at (a syntax error, a leftover placeholder)."""
        params = (self.message or {}).get("params") or {}
        return params.get("context") or ""

    @property
    def score_percent(self) -> int | None:
        return None if self.score is None else round(self.score * 100)


PACE_SECONDS = 2.0  # how long one process reuses its estimate of the grading pace


class Pace(NamedTuple):
    seconds_each: float  # a worker's time on one submission (mean of the last 20)
    seconds_between: float  # between two verdicts while the queue is busy
    running: int


_pace: tuple[float, Pace | None] = (-PACE_SECONDS, None)


def grading_pace() -> Pace | None:
    """The recent grading pace, or None when nothing runs. Status polls ask for it often;
    each process keeps it for PACE_SECONDS."""
    global _pace
    now = time.monotonic()
    taken, pace = _pace
    if now - taken < PACE_SECONDS:
        return pace
    running = (
        Submission.objects.filter(status=Submission.Status.RUNNING).count()
        + Attempt.objects.filter(status=Attempt.Status.RUNNING).count()
    )
    recent = (
        Submission.objects.filter(status=Submission.Status.DONE, started_at__isnull=False)
        .exclude(verdict=Verdict.INTERNAL_ERROR)
        .order_by("-pk")
    )
    rows = [
        (start, end) for start, end in recent.values_list("started_at", "finished_at")[:20] if start and end
    ]
    pace = None
    if running and rows:
        each = statistics.fmean((end - start).total_seconds() for start, end in rows)
        ends = sorted(end for _, end in rows)
        between = (ends[-1] - ends[0]).total_seconds() / (len(ends) - 1) if len(ends) > 1 else each
        # Verdicts closer together than one grade take mean workers were busy in parallel: that
        # spacing is the queue's pace. Farther apart, the queue was idle: assume all workers.
        pace = Pace(each, between if between < each else each / running, running)
    _pace = (now, pace)
    return pace


def forget_grading_pace() -> None:
    global _pace
    _pace = (-PACE_SECONDS, None)


def render_message(data: dict | None) -> str:
    if not data:
        return ""
    return Message(data["msgid"], data.get("params") or {}).render(gettext)


class SolutionReveal(models.Model):
    """A student chose to see an exercise's sample solution (allowed by its reveal rule)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    exercise = models.ForeignKey(
        "courses.Exercise",
        on_delete=models.PROTECT,
        related_name="solution_reveals",
        verbose_name=_("exercise"),
    )
    created_at = models.DateTimeField(_("time"), default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "exercise"], name="one_reveal_per_exercise")]
        verbose_name = _("sample solution shown")
        verbose_name_plural = _("sample solutions shown")

    def __str__(self) -> str:  # listed by the admin when it refuses to delete the exercise
        return f"{self.user} · {self.exercise.slug}"


class GradeChange(models.Model):
    """Every grade a submission has had: the first verdict and each applied regrade."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="grade_history", verbose_name=_("submission")
    )
    verdict = models.CharField(_("verdict"), max_length=16, choices=Verdict)
    score = models.FloatField(_("score"), null=True)
    tests = models.JSONField(_("tests"), default=list)
    message = models.JSONField(_("message"), null=True, blank=True)
    misconception = models.CharField(_("misconception"), max_length=64, blank=True)
    graded_hash = models.CharField(_("graded against"), max_length=64, blank=True)
    regrade = models.ForeignKey(
        "Regrade",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="changes",
        verbose_name=_("regrade"),
    )
    created_at = models.DateTimeField(_("time"), default=timezone.now)

    class Meta:
        ordering = ["submission", "created_at", "pk"]
        verbose_name = _("grade change")
        verbose_name_plural = _("grade history")

    def rendered_message(self) -> str:
        return render_message(self.message)


class Regrade(models.Model):
    """A regrade of an exercise's submissions: graded into a preview first, applied later.

    Preview results live in RegradeItem rows and never touch the submissions, so an
    interrupted preview loses nothing; applying is one transaction.
    """

    class Status(models.TextChoices):
        PREVIEW = "preview", _("preview")
        APPLIED = "applied", _("applied")
        CANCELLED = "cancelled", _("cancelled")

    exercise = models.ForeignKey(
        "courses.Exercise", on_delete=models.CASCADE, related_name="regrades", verbose_name=_("exercise")
    )
    content_hash = models.CharField(_("graded against"), max_length=64)
    status = models.CharField(_("status"), max_length=10, choices=Status, default=Status.PREVIEW)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("started by"),
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    applied_at = models.DateTimeField(_("applied"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("regrade")
        verbose_name_plural = _("regrades")


class RegradeItem(Job):
    """One submission graded again for a regrade's preview: a job below students' grading."""

    task_path = "grader.tasks.regrade_item"
    priority = -50  # a regrade of hundreds never holds up a student waiting for a verdict

    regrade = models.ForeignKey(
        Regrade, on_delete=models.CASCADE, related_name="items", verbose_name=_("regrade")
    )
    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="+", verbose_name=_("submission")
    )
    old_verdict = models.CharField(_("verdict before"), max_length=16, blank=True)
    old_score = models.FloatField(_("score before"), null=True)
    new_verdict = models.CharField(_("verdict after"), max_length=16, blank=True)
    new_score = models.FloatField(_("score after"), null=True)
    new_tests = models.JSONField(_("tests after"), default=list)
    new_message = models.JSONField(_("message after"), null=True)
    new_misconception = models.CharField(_("misconception after"), max_length=64, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["regrade", "submission"], name="one_item_per_submission")
        ]
        verbose_name = _("regraded submission")
        verbose_name_plural = _("regraded submissions")

    @property
    def done(self) -> bool:
        return self.status == self.Status.DONE

    @property
    def delta(self) -> float | None:
        if not self.done or self.new_score is None:
            return None
        return self.new_score - (self.old_score or 0.0)


CHECK_FAILED = gettext_noop("The check failed on the grader's side; the log has the reason. Run it again.")


class ItemCheck(Job):
    """An instructor's "test this item": the reference solution and every catalogued
    misconception variant, graded by a worker through the queue (never in a web request)."""

    task_path = "grader.tasks.check_item"
    priority = -50  # below students' own grading

    exercise = models.ForeignKey(
        "courses.Exercise", on_delete=models.CASCADE, related_name="checks", verbose_name=_("exercise")
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("requested by"),
    )
    created_at = models.DateTimeField(_("requested"), default=timezone.now)
    # What to grade, read from the course files when the check was asked for:
    # [{"label", "file", "code"}]; then one result per program.
    programs = models.JSONField(_("programs"), default=list)
    runs = models.JSONField(_("results"), default=list)
    message = models.TextField(_("message"), blank=True)  # a msgid, translated when shown

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("item check")
        verbose_name_plural = _("item checks")

    @classmethod
    def given_up_fields(cls, tries: int) -> dict:
        return {"message": CHECK_FAILED}

    def lease_duration(self) -> timedelta:
        """Longer than grading every program can take: a live worker never loses its lease. A
        program checked on several variants runs once on all of them, and only when that shared
        run is stopped, on each alone again (itemcheck._grade_programs): twice a run per program
        and variant at the very most."""
        per_run = max_run_seconds(parse_spec(self.exercise.spec).limits)
        repeated = 2 if len({p.get("variant", 0) for p in self.programs}) > 1 else 1
        return timedelta(
            seconds=per_run * repeated * max(1, len(self.programs)) + settings.GRADING_LEASE_MARGIN
        )

    @property
    def is_lost(self) -> bool:
        """Pending for far longer than grading its programs can take, with nobody sweeping:
        no grading worker runs (a running worker's sweeper queues a lost check again, which
        stamps it anew, or gives up on it)."""
        if not self.is_pending:
            return False
        since = self.started_at if self.status == self.Status.RUNNING else self.enqueued_at
        waited = timezone.now() - (since or self.created_at)
        return waited > self.lease_duration() + timedelta(seconds=settings.GRADING_REQUEUE_AFTER)
