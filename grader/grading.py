"""Submissions from store to verdict: accept, queue, claim with a lease, grade.

Grading never runs in a web request: a submission is stored (queued) in one transaction
and a task is enqueued when that transaction commits. A worker claims it under a lease;
only the holder of the current lease can write the result, so a presumed-dead worker's late
result never overwrites a newer one. The queue, the leases and the sweeper that gives lost
work back to the queue are every job's (jobs.queue, jobs.sweeper).
"""

import logging
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.db.models import Count, Min, Q
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from courses.models import Enrollment
from courses.variants import index_for, item_key, variant_seed
from jobs.signals import send_score_changed

from . import bundles
from .core import GradeResult, Message, SandboxUnavailable, check_source, grade, parse_spec, zygote
from .core.sandbox import max_run_seconds
from .models import GradeChange, SolutionReveal, Submission, Verdict

log = logging.getLogger("grader")


class SubmissionRefused(Exception):
    """Not accepted (too large, rate limit, too many pending); the message says what to do.
    ``status`` is the HTTP status a page answers with."""

    def __init__(self, message: str, retry_after: int | None = None, status: int = 429):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status

    def response(self, request, back: str, *, as_json: bool) -> HttpResponse:
        """What a page answers: the message as JSON (the page's script shows it) or a warning on
        the page at ``back``; with Retry-After when waiting helps."""
        response: HttpResponse
        if as_json:
            response = JsonResponse({"error": str(self), "retry_after": self.retry_after}, status=self.status)
        else:
            messages.warning(request, str(self))
            response = redirect(back)
        if self.retry_after:
            response["Retry-After"] = str(self.retry_after)
        return response


@dataclass
class Accepted:
    submission: Submission
    reused: bool  # an identical earlier submission was returned instead of a new one


def exercise_bundle(exercise) -> Path:
    return bundles.bundle_path("exercises", exercise.course.slug, exercise.slug, exercise.content_hash)


def seed_of(exercise, index: int) -> int | None:
    """The seed cases.py drew variant ``index``'s hidden cases from (None: no variants)."""
    if exercise.variant_count <= 1:
        return None
    return variant_seed(parse_spec(exercise.spec).seed, index)


def graded_variant(exercise, variant: int, user_id: int) -> int:
    """The variant a submission is graded on: the one it was given, unless a later import left
    the exercise with fewer variants; then the student's own variant of the exercise now."""
    if variant < max(1, exercise.variant_count):
        return variant
    return index_for(exercise.course.variant_salt, user_id, item_key(exercise), exercise.variant_count)


def submit(user, exercise, code: str, mode: str = Submission.Mode.SUBMIT, preview: bool = False) -> Accepted:
    """Store a submission and queue it for grading (after commit); code over the exercise's
    size limit is refused before anything is stored."""
    size, limit = len(code.encode("utf-8", "surrogatepass")), parse_spec(exercise.spec).limits.source_bytes
    if size > limit:
        raise SubmissionRefused(
            _(
                "Your code is %(size)s; the limit is %(limit)s. It was not saved: remove unneeded parts and "
                "send it again."
            )
            % {"size": filesizeformat(size), "limit": filesizeformat(limit)},
            status=413,
        )
    code_hash = Submission.hash_code(code)
    now = timezone.now()
    # The student's own variant (an instructor's preview: the instructor's): hidden cases of their own.
    variant = exercise.variant_index(user)
    with transaction.atomic():
        # One student's submissions go one at a time, so the limits below hold on PostgreSQL
        # too (SQLite's IMMEDIATE transactions already serialise writers).
        Enrollment.objects.select_for_update().filter(user=user, course_id=exercise.course_id).first()
        mine = Submission.objects.filter(user=user)
        same = (
            mine.filter(exercise=exercise, mode=mode, code_hash=code_hash, preview=preview, variant=variant)
            .exclude(verdict=Verdict.INTERNAL_ERROR)
            .filter(graded_hash__in=[exercise.content_hash, ""])
            .first()
        )
        if same is not None:
            return Accepted(same, reused=True)
        window = timedelta(seconds=settings.GRADING_RATE_WINDOW)
        recently = Q(created_at__gte=now - window)
        counts = mine.aggregate(
            recent=Count("pk", filter=recently),
            oldest_recent=Min("created_at", filter=recently),
            pending=Count("pk", filter=Q(status__in=[Submission.Status.QUEUED, Submission.Status.RUNNING])),
        )
        if counts["recent"] >= settings.GRADING_RATE_LIMIT:
            retry = int((counts["oldest_recent"] + window - now).total_seconds()) + 1
            raise SubmissionRefused(
                _("You are sending code very fast. Please wait %(seconds)d seconds and try again.")
                % {"seconds": retry},
                retry_after=retry,
            )
        if counts["pending"] >= settings.GRADING_MAX_PENDING:
            raise SubmissionRefused(
                _(
                    "You already have %(count)d submissions waiting to be graded. Wait for them to finish, then try again."
                )
                % {"count": settings.GRADING_MAX_PENDING},
                retry_after=5,
            )
        submission = Submission.objects.create(
            # PostgreSQL text cannot hold NUL; such code is rejected below anyway, and the
            # stored copy marks where the NULs were.
            user=user,
            exercise=exercise,
            mode=mode,
            code=code.replace("\x00", "\ufffd"),
            code_hash=code_hash,
            preview=preview,
            variant=variant,
            variant_seed=seed_of(exercise, variant),
            after_reveal=not preview and SolutionReveal.objects.filter(user=user, exercise=exercise).exists(),
            # The task goes on the queue when this commits; if that fails, the sweeper
            # re-enqueues after GRADING_REQUEUE_AFTER, counted from here.
            enqueued_at=now,
        )
        problem = check_source(code, parse_spec(exercise.spec))
        if problem is not None:
            # Rejected at once (NUL bytes, empty…): nothing to run, no attempt used.
            _store_result(
                submission, GradeResult(verdict=Verdict.REJECTED, message=problem), exercise.content_hash
            )
            submission.refresh_from_db()
            return Accepted(submission, reused=False)
        Submission.objects.enqueue(submission.pk, stamped=True)
    return Accepted(submission, reused=False)


def lease_duration(exercise) -> timedelta:
    """Longer than grading can take (the sandbox's start-up budget plus the wall limit), so a
    live worker on a loaded host never loses its lease and the job is not graded twice."""
    limits = parse_spec(exercise.spec).limits
    return timedelta(seconds=max_run_seconds(limits) + settings.GRADING_LEASE_MARGIN)


# What grading never reads: not loaded for every task.
GRADING_DEFERRED = (
    "tests",
    "message",
    "stdout",
    "last_error",
    "exercise__prompt_html",
    "exercise__starter_code",
    "exercise__solution_code",
    "exercise__reveal",
    "exercise__misconceptions",
    "exercise__course__summary",
    "exercise__course__description_html",
)


def claim(submission_id: int) -> tuple[Submission, str] | None:
    """Take the submission if it is queued; returns it with this worker's lease token."""
    taken = (
        Submission.objects.select_related("exercise__course")
        .defer(*GRADING_DEFERRED)
        .take(submission_id, lambda submission: lease_duration(submission.exercise))
    )
    if taken is None:
        return None
    submission, token = taken
    # Only the fields the claim changed: a full refresh would drop the loaded exercise.
    submission.refresh_from_db(fields=["status", "lease_token", "lease_expires_at", "tries", "started_at"])
    return submission, token


def run_grading(submission: Submission) -> tuple[GradeResult, str]:
    """Grade in a fresh sandbox against the exercise's current hidden data: the student's own
    variant of it (the one stored with the submission)."""
    exercise = submission.exercise
    variant = graded_variant(exercise, submission.variant, submission.user_id)
    if variant != submission.variant:
        Submission.objects.filter(pk=submission.pk).update(
            variant=variant, variant_seed=seed_of(exercise, variant)
        )
    directory = bundles.variant_dir(exercise_bundle(exercise), variant)
    spec, cases, ref = bundles.load(exercise.spec, directory)
    variants = bundles.load_variants(directory)
    if settings.GRADER_ZYGOTE and zygote.manager() is None:
        # Once per grading process; until it is ready (and whenever it fails) jobs get fresh sandboxes.
        zygote.enable_zygote()
    result = grade(
        submission.code,
        spec,
        cases,
        ref,
        variants=variants,
        only_visible=submission.mode == Submission.Mode.RUN,
    )
    return result, exercise.content_hash


def result_fields(result: GradeResult) -> dict:
    """A GradeResult as stored on a submission (messages language-neutral)."""
    return {
        "verdict": str(result.verdict),
        "score": result.score,
        "tests": [
            {
                "name": t.name,
                "passed": t.passed,
                "hidden": t.hidden,
                "weight": t.weight,
                "message": t.message.to_dict() if t.message else None,
                **t.feedback_fields(),  # weight probe and property checks (grader.core.probes/properties)
            }
            for t in result.tests
        ],
        "message": result.message.to_dict() if result.message else None,
        "misconception": result.misconception or "",
    }


def _store_result(
    submission: Submission, result: GradeResult, graded_hash: str, token: str | None = None
) -> bool:
    fields = result_fields(result)
    # The grader's own failure ends the job as failed; the verdict says so to the student.
    failed = result.verdict == Verdict.INTERNAL_ERROR
    with transaction.atomic():
        stored = Submission.objects.finish(
            submission.pk,
            token,
            status=Submission.Status.FAILED if failed else Submission.Status.DONE,
            stdout=result.stdout,
            duration_ms=result.duration_ms,
            graded_hash=graded_hash,
            **fields,
        )
        if stored:
            GradeChange.objects.create(
                submission_id=submission.pk,
                verdict=fields["verdict"],
                score=fields["score"],
                tests=fields["tests"],
                graded_hash=graded_hash,
                message=fields["message"],
                misconception=fields["misconception"],
            )
            if submission.mode == Submission.Mode.SUBMIT and not submission.preview:
                exercise = submission.exercise
                send_score_changed(Submission, [submission.user_id], exercise.course_id, exercise.lesson_id)
    return stored


def grade_claimed(submission_id: int) -> str:
    """The task body: claim, grade, store (if our lease still holds)."""
    claimed = claim(submission_id)
    if claimed is None:
        return "skipped"
    submission, token = claimed
    try:
        result, graded_hash = run_grading(submission)
    except SandboxUnavailable as exc:
        log.error("sandbox unavailable for submission %s: %s", submission_id, exc)
        result = GradeResult(
            verdict=Verdict.INTERNAL_ERROR,
            message=Message(
                gettext_noop(
                    "The grader is not available right now. Your code was kept; an administrator has been told."
                )
            ),
        )
        graded_hash = submission.exercise.content_hash
        Submission.objects.filter(pk=submission_id).update(last_error=str(exc)[:2000])
    except Exception as exc:  # the grader's own fault: recorded, not counted
        log.exception("grading submission %s failed", submission_id)
        result = GradeResult(
            verdict=Verdict.INTERNAL_ERROR,
            message=Message(
                gettext_noop(
                    "The grader failed on our side. Your code was kept and does not count as an attempt."
                )
            ),
        )
        graded_hash = submission.exercise.content_hash
        Submission.objects.filter(pk=submission_id).update(last_error=repr(exc)[:2000])
    stored = _store_result(submission, result, graded_hash, token)
    if not stored:
        log.warning("dropped a late result for submission %s (lease lost)", submission_id)
    return str(result.verdict) if stored else "stale"
