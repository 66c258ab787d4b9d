"""The grade outbox: each score change of an LMS user on an LMS link is a row to send to the
platform (Assignment and Grade Services), one more job of the one queue (jobs.models.Job).

A row's ``changed_at`` is when the score changed in Dikkat; it is the score's AGS
``timestamp``, and a platform keeps a score only when it is newer than the one it has. The
score itself is read when the row is sent (lti.passback), so a row never carries a value older
than its time. A row is sent only while it is the newest of its (link, user): an older one is
marked superseded instead, so scores never arrive out of order, and sending one again is
harmless. This module holds only the model (lti.models imports it; it imports nothing of lti).
"""

from datetime import datetime

from django.conf import settings
from django.db import models, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from jobs.models import Job
from jobs.queue import FAILED, QUEUED, JobQuerySet, send


class Delivery(models.TextChoices):
    """What an instructor reads of a row: the outbox's own words, not the grader's."""

    PENDING = "pending", _("waiting to be sent")
    FAILING = "failing", _("failing")
    SENT = "sent", _("sent")
    SUPERSEDED = "superseded", _("replaced by a newer score")


class ScoreOutboxQuerySet(JobQuerySet):
    def newer_than(self, row: "ScoreOutbox") -> "ScoreOutboxQuerySet":
        """The rows of the same link and user made for a later score change."""
        return self.filter(link_id=row.link_id, user_id=row.user_id).filter(
            Q(changed_at__gt=row.changed_at) | Q(changed_at=row.changed_at, pk__gt=row.pk)
        )

    def newest(self) -> "ScoreOutboxQuerySet":
        """One row per (link, user): the latest score change's, which says where that
        student's score in that grade column stands."""
        later = ScoreOutbox.objects.filter(link_id=OuterRef("link_id"), user_id=OuterRef("user_id")).filter(
            Q(changed_at__gt=OuterRef("changed_at"))
            | Q(changed_at=OuterRef("changed_at"), pk__gt=OuterRef("pk"))
        )
        return self.exclude(Exists(later))

    def note_change(self, link_id: int, user_id: int, lms_user_id: str, at: datetime) -> None:
        """A score of ``user_id`` on the link changed at ``at``: a row still waiting for a worker
        takes the new time (the score is read when it is sent) and is due at once, else a new
        row is queued."""
        waiting = dict(
            self.filter(link_id=link_id, user_id=user_id, status=QUEUED).values_list("pk", "next_try_at")
        )
        bumped = self.filter(pk__in=list(waiting), status=QUEUED).update(
            changed_at=at, lms_user_id=lms_user_id, next_try_at=None
        )
        if bumped:
            for pk, due in waiting.items():
                if due is not None:  # it waited for a later time (back-off, hidden scores): a task now
                    self.enqueue(pk)
            return
        row = self.create(
            link_id=link_id, user_id=user_id, lms_user_id=lms_user_id, changed_at=at, enqueued_at=at
        )
        self.enqueue(row.pk, stamped=True)

    def retry_later(self, pk: int, token: str, when: datetime, error: str, **fields) -> bool:
        """Give a claimed row back to the queue, due at ``when`` (the platform failed for now).
        Its count of lost workers starts again: the sweeper gives up after GRADING_MAX_TRIES
        workers lost in a row, not after platform errors (``attempts`` counts those)."""
        # enqueued_at is the due time: the sweeper takes the task for lost only after it.
        stored = self.holding(pk, token).update(
            status=QUEUED,
            lease_token="",
            lease_expires_at=None,
            tries=0,
            next_try_at=when,
            enqueued_at=when,
            last_error=error[:2000],
            **fields,
        )
        if stored:
            model = self.model
            transaction.on_commit(lambda: send(model, pk, run_after=when), using=self.db)
        return bool(stored)

    def requeue(self, pks) -> int:
        """Send again now, by hand (an instructor's "send again"): due at once, with the whole
        count of LTI_OUTBOX_MAX_TRIES tries again (the instructor fixed the cause)."""
        ids = list(pks)
        self.filter(pk__in=ids, status__in=(QUEUED, FAILED)).update(next_try_at=None, attempts=0)
        return super().requeue(ids)


class ScoreOutbox(Job):
    """One score change of one LMS user on one LMS link, to be sent to the platform."""

    task_path = "lti.tasks.send_score"
    priority = -10  # after students' grading: a score in the LMS may wait a moment, a verdict not

    link = models.ForeignKey(
        "lti.ResourceLink", on_delete=models.CASCADE, related_name="scores", verbose_name=_("LMS link")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    # The LMS's id of the student (its `sub`), the AGS score's userId.
    lms_user_id = models.CharField(_("LMS user id (sub)"), max_length=255)
    changed_at = models.DateTimeField(_("score changed"), default=timezone.now)
    score = models.FloatField(_("score sent"), null=True, blank=True)
    maximum = models.FloatField(_("maximum sent"), null=True, blank=True)
    sent_at = models.DateTimeField(_("sent"), null=True, blank=True)
    superseded = models.BooleanField(_("replaced by a newer score"), default=False)
    next_try_at = models.DateTimeField(_("next try"), null=True, blank=True)
    # Sends that called the platform since the row was queued (or sent again by hand).
    attempts = models.PositiveSmallIntegerField(_("sending tries"), default=0)
    last_try_at = models.DateTimeField(_("last try"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    # django-stubs types a manager as a class variable, so narrowing it is an "override".
    objects = ScoreOutboxQuerySet.as_manager()  # type: ignore[misc]

    class Meta:
        ordering = ["-changed_at", "-pk"]
        indexes = [models.Index(fields=["link", "user", "changed_at"])]
        verbose_name = _("score to send")
        verbose_name_plural = _("scores to send")

    def __str__(self) -> str:
        return f"{self.lms_user_id} on {self.link_id} at {self.changed_at:%Y-%m-%d %H:%M:%S}"

    @property
    def delivery(self) -> str:
        if self.status == self.Status.FAILED:
            return Delivery.FAILING
        if self.status == self.Status.DONE:
            return Delivery.SUPERSEDED if self.superseded else Delivery.SENT
        return Delivery.PENDING

    def get_delivery_display(self) -> str:
        return str(Delivery(self.delivery).label)
