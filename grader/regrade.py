"""Regrading an exercise after its solution or cases changed: preview first, then apply.

The preview grades each submission again (through the queue) into RegradeItem rows without
touching the submission, so instructors see who goes up or down before anything changes and
an interrupted preview loses nothing: ``resume`` queues what is left. ``apply`` writes every
new grade and its history in one transaction.
"""

import logging

from django.db import transaction
from django.utils import timezone

from jobs.signals import send_score_changed

from . import bundles
from .core import grade
from .grading import graded_variant, lease_duration, result_fields, seed_of
from .models import GradeChange, Regrade, RegradeItem, Submission, Verdict

log = logging.getLogger("grader")


def regradable(exercise):
    """Submitted (not example-run) code that was graded, or that the grader failed on."""
    return Submission.objects.filter(
        exercise=exercise,
        mode=Submission.Mode.SUBMIT,
        status__in=[Submission.Status.DONE, Submission.Status.FAILED],
        preview=False,
    ).exclude(verdict__in=[Verdict.REJECTED])


def start(exercise, user, submission_ids=None) -> Regrade:
    submissions = regradable(exercise)
    if submission_ids is not None:
        submissions = submissions.filter(pk__in=submission_ids)
    now = timezone.now()
    with transaction.atomic():
        regrade = Regrade.objects.create(
            exercise=exercise, content_hash=exercise.content_hash, created_by=user
        )
        RegradeItem.objects.bulk_create(
            [
                RegradeItem(
                    regrade=regrade, submission=s, old_verdict=s.verdict, old_score=s.score, enqueued_at=now
                )
                for s in submissions.only("pk", "verdict", "score")
            ]
        )
        transaction.on_commit(lambda: resume(regrade))
    return regrade


def resume(regrade: Regrade) -> int:
    """Queue every preview item not graded yet, again if the grader failed on it (idempotent);
    returns how many. Items run below students' own submissions (RegradeItem.priority)."""
    return RegradeItem.objects.requeue(regrade.items.values_list("pk", flat=True))


def grade_item(item_id: int) -> str:
    """The task body: claim one item, grade the submission again, store the preview's grade
    (if the lease still holds)."""
    taken = RegradeItem.objects.select_related("regrade__exercise__course", "submission").take(
        item_id, lambda item: lease_duration(item.regrade.exercise)
    )
    if taken is None:
        return "skipped"
    item, token = taken
    regrade = item.regrade
    exercise = regrade.exercise
    if regrade.status != Regrade.Status.PREVIEW:  # applied or cancelled meanwhile: nothing to do
        RegradeItem.objects.give_up(item_id, token, f"the regrade was {regrade.status}")
        return "skipped"
    try:
        # Each submission against its student's own variant (the one it was graded on).
        directory = bundles.variant_dir(
            bundles.bundle_path("exercises", exercise.course.slug, exercise.slug, regrade.content_hash),
            graded_variant(exercise, item.submission.variant, item.submission.user_id),
        )
        spec, cases, ref = bundles.load(exercise.spec, directory)
        variants = bundles.load_variants(directory)
        result = grade(item.submission.code, spec, cases, ref, variants=variants)
    except Exception as exc:  # the grader's fault: the item waits for "resume"
        log.exception("regrading item %s failed", item_id)
        return "failed" if RegradeItem.objects.give_up(item_id, token, repr(exc)) else "stale"
    if result.verdict in (Verdict.INTERNAL_ERROR, Verdict.REJECTED):
        # The grader's own trouble is not a grade: the item waits for "resume".
        RegradeItem.objects.give_up(item_id, token, f"graded {result.verdict}")
        return str(result.verdict)
    fields = result_fields(result)
    stored = RegradeItem.objects.finish(
        item_id,
        token,
        new_verdict=fields["verdict"],
        new_score=fields["score"],
        new_tests=fields["tests"],
        new_message=fields["message"],
        new_misconception=fields["misconception"],
    )
    return fields["verdict"] if stored else "stale"


def summary(regrade: Regrade) -> dict:
    items = list(
        regrade.items.select_related("submission__user").order_by(
            "submission__user__username", "submission__created_at"
        )
    )
    done = [i for i in items if i.done]
    return {
        "items": items,
        "total": len(items),
        "done": len(done),
        "up": sum(1 for i in done if (i.delta or 0) > 1e-9),
        "down": sum(1 for i in done if (i.delta or 0) < -1e-9),
        "same": sum(1 for i in done if abs(i.delta or 0) <= 1e-9),
        "complete": len(done) == len(items),
    }


class NotReady(Exception):
    pass


def _keep_in_history(submission: Submission) -> None:
    """The grade a regrade replaces stays whole in the history: verdict, score, cases, message
    and misconception. A first verdict's entry is written without its message, so it is
    completed here; a grade with no entry at all (older data) gets one."""
    current = submission.grade_history.order_by("-created_at", "-pk").first()
    if current is not None and (current.verdict, current.score) == (submission.verdict, submission.score):
        GradeChange.objects.filter(pk=current.pk).update(
            message=submission.message, misconception=submission.misconception
        )
        return
    GradeChange.objects.create(
        submission=submission,
        verdict=submission.verdict,
        score=submission.score,
        tests=submission.tests,
        message=submission.message,
        misconception=submission.misconception,
        graded_hash=submission.graded_hash,
        created_at=submission.finished_at or submission.created_at,
    )


def apply(regrade: Regrade) -> int:
    """Write the previewed grades to the submissions, keeping the old ones in the history."""
    with transaction.atomic():
        regrade = Regrade.objects.select_for_update().get(pk=regrade.pk)
        if regrade.status != Regrade.Status.PREVIEW:
            raise NotReady("this regrade was already applied or cancelled")
        if regrade.content_hash != regrade.exercise.content_hash:
            raise NotReady("the exercise changed again since this preview; start a new preview")
        items = list(regrade.items.select_related("submission"))
        if not all(item.done for item in items):
            raise NotReady("the preview is not complete yet")
        changed = [
            i.submission_id
            for i in items
            if (i.submission.verdict, i.submission.score) != (i.old_verdict, i.old_score)
        ]
        if changed:
            raise NotReady("some submissions were graded again since this preview; start a new preview")
        exercise = regrade.exercise
        for item in items:
            _keep_in_history(item.submission)
            # The variant it was regraded on (the same content as then: the hash is checked above).
            index = graded_variant(exercise, item.submission.variant, item.submission.user_id)
            Submission.objects.filter(pk=item.submission_id).update(
                variant=index,
                variant_seed=seed_of(exercise, index),
                verdict=item.new_verdict,
                score=item.new_score,
                tests=item.new_tests,
                message=item.new_message,
                misconception=item.new_misconception,
                graded_hash=regrade.content_hash,
                status=Submission.Status.DONE,  # a grade now, even where the grader had failed
            )
            GradeChange.objects.create(
                submission_id=item.submission_id,
                verdict=item.new_verdict,
                score=item.new_score,
                tests=item.new_tests,
                message=item.new_message,
                misconception=item.new_misconception,
                graded_hash=regrade.content_hash,
                regrade=regrade,
            )
        students = [item.submission.user_id for item in items if not item.submission.preview]
        send_score_changed(Submission, students, exercise.course_id, exercise.lesson_id)
        regrade.status = Regrade.Status.APPLIED
        regrade.applied_at = timezone.now()
        regrade.save(update_fields=["status", "applied_at"])
        # Older open previews of this exercise now describe grades that no longer stand.
        Regrade.objects.filter(exercise=regrade.exercise, status=Regrade.Status.PREVIEW).update(
            status=Regrade.Status.CANCELLED
        )
    return len(items)
