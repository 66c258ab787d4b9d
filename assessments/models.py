"""Graded assessments: homework with due dates and late windows, timed exams.

An assessment is course content (authored in ``assessments/<slug>.toml``, imported with the
course, retired instead of deleted). It does not copy items: it names questions and exercises
of its course, and the answers and submissions a student sends *on the assessment's page* are
linked to it (``HandIn``). Credit is never stored: it is computed from when each hand-in was
received and the student's effective dates (the assessment's, moved by an override), so an
extension given later applies to work already received, and a grading queue that finishes
after the due date changes nothing.
"""

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.tasks import task
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import RateCounter
from accounts.ratelimit import human_duration
from courses.models import RETIRE_HELP, ActiveQuerySet, Course, Exercise, Question
from grader.models import NOT_COUNTED
from jobs.signals import send_score_changed

WRONG_PASSWORDS = 10  # per student and assessment in an hour; then the password is not even compared
# Wrong passwords for one assessment from all accounts together in an hour: someone with many
# accounts cannot guess it either. A class that mistypes leaves room; students who started
# already are not held back by it (ASSESSMENT_PASSWORD_LIMIT in settings overrides it).
WRONG_PASSWORDS_PER_ASSESSMENT = 100
PASSWORD_WINDOW = timedelta(hours=1)


class Refused(Exception):
    """Work not accepted for an assessment; the message (translated) says why and what to do."""


class TooManyPasswords(Refused):
    """Passwords are not compared for a while: ``retry_after`` seconds (the page's Retry-After)."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = max(1, retry_after)


@dataclass(frozen=True)
class Windows:
    """One student's dates for an assessment, overrides applied."""

    opens: datetime
    due: datetime
    closes: datetime
    late: tuple[tuple[datetime, float], ...]  # (until, credit), in time order

    def credit_at(self, received: datetime) -> float | None:
        """The share of the score that work received at ``received`` earns; None: not accepted."""
        if received < self.opens or received > self.closes:
            return None
        if received <= self.due:
            return 1.0
        for until, credit in self.late:
            if received <= until:
                return credit
        return None

    def state_at(self, now: datetime) -> str:
        """ "upcoming", "open", "late" or "closed"."""
        if now < self.opens:
            return "upcoming"
        if now <= self.due:
            return "open"
        return "late" if now <= self.closes else "closed"


class Assessment(models.Model):
    class Kind(models.TextChoices):
        HOMEWORK = "homework", _("homework")
        EXAM = "exam", _("exam")

    class Feedback(models.TextChoices):
        IMMEDIATE = "immediate", _("immediate")
        SCORE_ONLY = "score_only", _("score only")
        AFTER_CLOSE = "after_close", _("after the close")

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="assessments", verbose_name=_("course")
    )
    slug = models.SlugField(_("slug"))
    title = models.CharField(_("title"), max_length=200)
    kind = models.CharField(_("kind"), max_length=8, choices=Kind)
    opens = models.DateTimeField(_("opens"))
    due = models.DateTimeField(_("due"))
    closes = models.DateTimeField(_("closes"))
    # [{"until": ISO 8601 with offset, "credit": 0.8}], in time order; the last until is closes.
    late = models.JSONField(_("late windows"), default=list, blank=True)
    time_limit_minutes = models.PositiveIntegerField(_("time limit (minutes)"), null=True, blank=True)
    password = models.CharField(_("password"), max_length=200, blank=True)
    feedback = models.CharField(_("feedback"), max_length=16, choices=Feedback, default=Feedback.IMMEDIATE)
    max_attempts = models.PositiveIntegerField(_("attempts per item"), null=True, blank=True)
    # [{"item": slug, "points": 1.0}] or [{"pool": [slugs], "pick": 2, "points": 1.0}] (points per drawn item)
    items = models.JSONField(_("items"), default=list)
    # after_close feedback may be shown before the close when an instructor releases it.
    feedback_released = models.BooleanField(_("feedback released"), default=False)
    source_file = models.CharField(_("source file"), max_length=500, blank=True)
    retired = models.BooleanField(_("retired"), default=False, help_text=RETIRE_HELP)

    objects = ActiveQuerySet.as_manager()

    class Meta:
        ordering = ["course", "opens", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="assessment_slug_unique_in_course")
        ]
        verbose_name = _("assessment")
        verbose_name_plural = _("assessments")

    def __str__(self) -> str:
        return self.title

    @property
    def is_exam(self) -> bool:
        return self.kind == self.Kind.EXAM

    # -- dates -------------------------------------------------------------------------------
    def windows_for(self, override: "StudentOverride | None" = None) -> Windows:
        """The student's dates: an extended due moves closes and every late window with it; an
        explicit close in the override wins over the moved one."""
        late = [(datetime.fromisoformat(w["until"]), float(w["credit"])) for w in self.late]
        due, closes = self.due, self.closes
        if override is not None and override.due is not None and override.due > due:
            shift = override.due - due
            due, closes = override.due, closes + shift
            late = [(until + shift, credit) for until, credit in late]
        if override is not None and override.closes is not None and override.closes != closes:
            # The student's own close: windows ending before it stay; the rest of the time up to
            # it earns the credit of the window it falls in (past every window: the last credit).
            closes = max(override.closes, due)
            after = [credit for until, credit in late if until >= closes]
            last = after[0] if after else (late[-1][1] if late else 1.0)
            late = [(until, credit) for until, credit in late if until < closes]
            if closes > due:
                late.append((closes, last))
        return Windows(self.opens, due, closes, tuple(late))

    # -- items -------------------------------------------------------------------------------
    def item_slugs(self) -> list[str]:
        return [
            slug for entry in self.items for slug in ([entry["item"]] if "item" in entry else entry["pool"])
        ]

    def items_for(self, user, draws: dict | None = None) -> list[dict]:
        """The student's items in order: [{"item": slug, "points": p}]. Pools are drawn per
        student (``draws``: PoolDraw.drawn's value for the student; read when not given)."""
        if draws is None:
            draws = PoolDraw.drawn(self, [user])[user.pk]
        out = []
        for entry in self.items:
            if "item" in entry:
                out.append({"item": entry["item"], "points": float(entry["points"])})
            else:
                out.extend(
                    {"item": slug, "points": float(entry["points"])} for slug in draws[_pool_key(entry)]
                )
        return out

    def item_objects(self) -> dict[str, "Question | Exercise"]:
        """slug → the course's Question or Exercise (retired ones too: their work is kept)."""
        slugs = self.item_slugs()
        found: dict[str, Question | Exercise] = {
            q.slug: q for q in self.course.questions.filter(slug__in=slugs).select_related("lesson", "course")
        }
        found.update(
            {
                e.slug: e
                for e in self.course.exercises.filter(slug__in=slugs).select_related("lesson", "course")
            }
        )
        return found

    # -- one student's access ----------------------------------------------------------------
    def override_for(self, user) -> "StudentOverride | None":
        return self.overrides.filter(user=user).first()

    def session_for(self, user) -> "AssessmentSession | None":
        return self.sessions.filter(user=user).first()

    def attempts_allowed(self, override: "StudentOverride | None") -> int | None:
        if self.max_attempts is None:
            return None
        return self.max_attempts + (override.extra_attempts if override else 0)

    def check_hand_in(self, user, slug: str, received: datetime) -> float:
        """The credit for work on item ``slug`` received at ``received``, or Refused saying why.
        Called before storing (to spare the grader) and again on the stored row's own time."""
        if slug not in {entry["item"] for entry in self.items_for(user, PoolDraw.keep(self, user))}:
            if slug in self.item_slugs():
                raise Refused(gettext("This question is not part of your version of the assessment."))
            raise Refused(gettext("This item is not part of this assessment."))
        override = self.override_for(user)
        windows = self.windows_for(override)
        session = self.session_for(user)
        if self.password and session is None:
            raise Refused(gettext("Enter the assessment's password on its page first."))
        if self.is_exam:
            if session is None:
                raise Refused(gettext("Start the exam on its page first."))
            if session.submitted_at is not None:
                raise Refused(gettext("You have handed in this exam; answers can no longer be changed."))
            if received > session.deadline:
                raise Refused(gettext("Your time for this exam is over; this answer was not saved."))
        credit = windows.credit_at(received)
        if credit is None:
            if received < windows.opens:
                raise Refused(gettext("This assessment is not open yet."))
            raise Refused(gettext("This assessment is closed; work can no longer be handed in."))
        allowed = self.attempts_allowed(override)
        if allowed is not None and self.hand_ins.filter(user=user, item=slug).counting().count() >= allowed:
            raise Refused(gettext("You have used all your attempts for this item in this assessment."))
        return credit

    def feedback_shown(self, user, now: datetime | None = None, windows: Windows | None = None) -> str:
        """What a student sees of graded work: "full", "score" (score and how many parts are
        wrong, never which) or "received" (only that it arrived). ``windows``: the student's,
        when the caller has them already."""
        if self.feedback == self.Feedback.IMMEDIATE:
            return "full"
        if self.feedback == self.Feedback.SCORE_ONLY:
            return "score"
        closes = (windows or self.windows_for(self.override_for(user))).closes
        return "full" if self.feedback_released or (now or timezone.now()) > closes else "received"

    def start(self, user, password: str = "", now: datetime | None = None) -> "AssessmentSession":
        """Start an exam (or unlock a homework's password) for ``user``; starting again resumes."""
        now = now or timezone.now()
        if self.password:
            self._check_password(user, str(password), now)
        with transaction.atomic():
            session = AssessmentSession.objects.select_for_update().filter(assessment=self, user=user).first()
            if session is not None:
                return session
            override = self.override_for(user)
            windows = self.windows_for(override)
            state = windows.state_at(now)
            if state == "upcoming":
                raise Refused(gettext("This assessment is not open yet."))
            if state == "closed":
                raise Refused(gettext("This assessment is closed; work can no longer be handed in."))
            PoolDraw.keep(self, user)  # an exam's version is fixed from its start
            session = AssessmentSession.objects.create(
                assessment=self,
                user=user,
                started_at=now,
                deadline=self.deadline_for(now, windows, override),
            )
            if self.is_exam:
                ExamLogEntry.objects.create(
                    assessment=self,
                    user=user,
                    at=now,
                    event=ExamLogEntry.Event.STARTED,
                    detail=f"deadline {session.deadline.isoformat()}",
                )
                session.schedule_close()
            return session

    def _check_password(self, user, password: str, now: datetime) -> None:
        """Refused for a wrong password, and TooManyPasswords for any password after
        WRONG_PASSWORDS tries by one student within an hour, or after the assessment's own cap
        of wrong passwords from all accounts together (WRONG_PASSWORDS_PER_ASSESSMENT an hour).
        Both are counted in the rate limits' shared counters before the password is compared,
        so that tries sent at once cannot all slip under a limit; the shared counter gives a
        right password back, so it counts only wrong ones. A student who has started already
        is not held back by the shared cap: guessing by others does not lock them out."""
        key = f"assessment-password:{self.pk}:{user.pk}"
        tries, window_end = RateCounter.add_one(key, PASSWORD_WINDOW)
        if tries > WRONG_PASSWORDS:
            seconds, duration = _wait_until(window_end, now)
            raise TooManyPasswords(
                gettext("Too many wrong passwords. Try again in %(duration)s, or ask your instructor.")
                % {"duration": duration},
                seconds,
            )
        started = AssessmentSession.objects.filter(assessment=self, user=user).exists()
        shared = f"assessment-password:{self.pk}:*"
        if not started:
            wrong, shared_end = RateCounter.add_one(shared, PASSWORD_WINDOW)
            if wrong > getattr(settings, "ASSESSMENT_PASSWORD_LIMIT", WRONG_PASSWORDS_PER_ASSESSMENT):
                seconds, duration = _wait_until(shared_end, now)
                raise TooManyPasswords(
                    gettext(
                        "Too many wrong passwords have been tried for this assessment. "
                        "Try again in %(duration)s, or ask your instructor."
                    )
                    % {"duration": duration},
                    seconds,
                )
        if not constant_time_compare(password, self.password):
            raise Refused(gettext("That password is not right. Ask your instructor for it."))
        if not started:  # a right password is not a guess: given back
            RateCounter.objects.filter(key=shared, count__gt=0).update(count=F("count") - 1)

    def deadline_for(
        self, started: datetime, windows: Windows, override: "StudentOverride | None"
    ) -> datetime:
        if not self.is_exam or not self.time_limit_minutes:
            return windows.closes
        factor = override.time_factor if override else 1.0
        return min(started + timedelta(minutes=self.time_limit_minutes * factor), windows.closes)


def _wait_until(window_end: datetime, now: datetime) -> tuple[int, str]:
    """Seconds until ``window_end`` (at least 1) and the same as words ("15 dakika")."""
    seconds = max(1, math.ceil((window_end - now).total_seconds()))
    return seconds, human_duration(seconds)


def _pool_key(entry: dict) -> str:
    # A pool is known by its members and pick: editing it makes a new draw, reordering does not.
    return f"{entry['pick']}:" + ",".join(sorted(entry["pool"]))


class PoolDraw(models.Model):
    """Which pool items a student got: drawn once (seeded by assessment, student and pool, so a
    lost row draws the same again) and kept."""

    assessment = models.ForeignKey(
        Assessment, on_delete=models.CASCADE, related_name="draws", verbose_name=_("assessment")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    draws = models.JSONField(_("drawn items"), default=dict)  # pool key → [slugs]

    class Meta:
        verbose_name = _("pool draw")
        verbose_name_plural = _("pool draws")
        constraints = [models.UniqueConstraint(fields=["assessment", "user"], name="one_draw_per_student")]

    @staticmethod
    def _draw(assessment: Assessment, user_id: int, entry: dict) -> list[str]:
        rng = random.Random(f"{assessment.course_id}:{assessment.slug}:{user_id}:{_pool_key(entry)}")
        return rng.sample(sorted(entry["pool"]), entry["pick"])

    @classmethod
    def drawn(cls, assessment: Assessment, users) -> dict[int, dict]:
        """user id → pool key → slugs, for many students in one query, writing nothing: a kept
        draw where there is one, else the draw that keeping would store (it is seeded)."""
        pools = [entry for entry in assessment.items if "pool" in entry]
        ids = [user.pk for user in users]
        if not pools:
            return {pk: {} for pk in ids}
        kept = dict(
            cls.objects.filter(assessment=assessment, user_id__in=ids).values_list("user_id", "draws")
        )
        out = {}
        for pk in ids:
            draws = dict(kept.get(pk) or {})
            for entry in pools:
                key = _pool_key(entry)
                if key not in draws:
                    draws[key] = cls._draw(assessment, pk, entry)
            out[pk] = draws
        return out

    @classmethod
    def keep(cls, assessment: Assessment, user) -> dict:
        """The student's draws, stored: called when work is handed in or an exam starts."""
        pools = [entry for entry in assessment.items if "pool" in entry]
        if not pools:
            return {}
        row, _created = cls.objects.get_or_create(assessment=assessment, user=user)
        missing = [entry for entry in pools if _pool_key(entry) not in row.draws]
        if missing:
            for entry in missing:
                row.draws[_pool_key(entry)] = cls._draw(assessment, user.pk, entry)
            cls.objects.filter(pk=row.pk).update(draws=row.draws)
        return row.draws


class StudentOverride(models.Model):
    """One student's exceptions: later due/close, more time in exams, more attempts."""

    assessment = models.ForeignKey(
        Assessment, on_delete=models.CASCADE, related_name="overrides", verbose_name=_("assessment")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    due = models.DateTimeField(_("extended due"), null=True, blank=True)
    closes = models.DateTimeField(_("extended close"), null=True, blank=True)
    time_factor = models.FloatField(_("time factor"), default=1.0)
    extra_attempts = models.PositiveIntegerField(_("extra attempts"), default=0)
    note = models.CharField(_("note"), max_length=500, blank=True)
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("set by"),
    )
    set_at = models.DateTimeField(_("set at"), default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assessment", "user"], name="one_override_per_student")
        ]
        verbose_name = _("override")
        verbose_name_plural = _("overrides")

    def __str__(self) -> str:
        return f"{self.assessment.slug} · {self.user}"

    def apply_to_session(self) -> None:
        """A started exam's deadline follows a changed time factor or close (logged)."""
        session = self.assessment.session_for(self.user)
        if session is None or session.submitted_at is not None:
            return
        deadline = self.assessment.deadline_for(session.started_at, self.assessment.windows_for(self), self)
        if deadline != session.deadline:
            AssessmentSession.objects.filter(pk=session.pk).update(deadline=deadline)
            before, session.deadline = session.deadline, deadline
            session.schedule_close()  # a task at the old deadline finds the exam not over yet
            ExamLogEntry.objects.create(
                assessment=self.assessment,
                user=self.user,
                event=ExamLogEntry.Event.EXTENDED,
                detail=f"deadline {before.isoformat()} → {deadline.isoformat()}",
            )


class AssessmentSession(models.Model):
    """A student's start: an exam's clock (the deadline is the server's), or a homework's
    password entered once."""

    assessment = models.ForeignKey(
        Assessment, on_delete=models.CASCADE, related_name="sessions", verbose_name=_("assessment")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    started_at = models.DateTimeField(_("started"))
    deadline = models.DateTimeField(_("deadline"))
    submitted_at = models.DateTimeField(_("handed in"), null=True, blank=True)

    class Meta:
        verbose_name = _("start")
        verbose_name_plural = _("starts")
        constraints = [models.UniqueConstraint(fields=["assessment", "user"], name="one_session_per_student")]

    def seconds_left(self, now: datetime | None = None) -> int:
        if self.submitted_at is not None:
            return 0
        # Rounded up: a page counting this down reaches zero at the deadline, never before it.
        return max(0, math.ceil((self.deadline - (now or timezone.now())).total_seconds()))

    def is_over(self, now: datetime | None = None) -> bool:
        return self.submitted_at is not None or (now or timezone.now()) >= self.deadline

    def hand_in(self, now: datetime | None = None) -> bool:
        """End the exam; False when it had already ended. Past the deadline it ends at the
        deadline, logged as the time running out (the student may never have come back)."""
        now = now or timezone.now()
        time_up = now >= self.deadline
        done = AssessmentSession.objects.filter(pk=self.pk, submitted_at__isnull=True).update(
            submitted_at=min(now, self.deadline)
        )
        if done:
            ExamLogEntry.objects.create(
                assessment=self.assessment,
                user=self.user,
                at=self.deadline if time_up else now,
                event=ExamLogEntry.Event.TIME_UP if time_up else ExamLogEntry.Event.SUBMITTED,
            )
            self.refresh_from_db(fields=["submitted_at"])
        return bool(done)

    def schedule_close(self) -> None:
        """Hand the exam in at its deadline on the server, whether or not the student is still
        there: a task for the workers, run at the deadline once this transaction commits."""
        if not self.assessment.is_exam:
            return
        session_id, deadline = self.pk, self.deadline
        transaction.on_commit(lambda: close_exam.using(run_after=deadline).enqueue(session_id))


class HandInQuerySet(models.QuerySet):
    def counting(self):
        """Hand-ins that use an attempt: not the grader's failures, not code rejected unrun."""
        return self.exclude(attempt__status="failed").exclude(submission__verdict__in=NOT_COUNTED)


class HandIn(models.Model):
    """An answer or submission received on an assessment's page. Credit is computed from
    ``received_at`` (the row's own created_at) and the student's windows, never stored."""

    assessment = models.ForeignKey(
        Assessment, on_delete=models.PROTECT, related_name="hand_ins", verbose_name=_("assessment")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    item = models.SlugField(_("item"))
    # RESTRICT, not PROTECT: an attempt cannot be deleted alone while it is handed in, but
    # deleting the student (which deletes the hand-in as well) still works.
    attempt = models.ForeignKey(
        "courses.Attempt",
        on_delete=models.RESTRICT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("answer"),
    )
    submission = models.ForeignKey(
        "grader.Submission",
        on_delete=models.RESTRICT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("submission"),
    )
    received_at = models.DateTimeField(_("received"), db_index=True)

    objects = HandInQuerySet.as_manager()

    class Meta:
        verbose_name = _("hand-in")
        verbose_name_plural = _("hand-ins")
        ordering = ["received_at", "pk"]
        indexes = [models.Index(fields=["assessment", "user", "item"])]
        constraints = [
            models.UniqueConstraint(fields=["assessment", "attempt"], name="attempt_handed_in_once"),
            models.UniqueConstraint(fields=["assessment", "submission"], name="submission_handed_in_once"),
        ]


class ExamLogEntry(models.Model):
    class Event(models.TextChoices):
        STARTED = "started", _("started")
        SAVED = "saved", _("answer saved")
        REFUSED = "refused", _("refused")
        SUBMITTED = "submitted", _("handed in")
        TIME_UP = "time_up", _("handed in: time over")
        EXTENDED = "extended", _("time changed")

    assessment = models.ForeignKey(
        Assessment, on_delete=models.CASCADE, related_name="log", verbose_name=_("assessment")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    at = models.DateTimeField(_("time"), default=timezone.now)
    event = models.CharField(_("event"), max_length=12, choices=Event)
    item = models.SlugField(_("item"), blank=True)
    detail = models.TextField(_("detail"), blank=True)

    class Meta:
        verbose_name = _("exam log entry")
        verbose_name_plural = _("exam log")
        ordering = ["at", "pk"]


class ManualScore(models.Model):
    """An instructor's score for one student's item (points), replacing the computed one; the
    student sees the comment. Every change is kept in ManualScoreChange."""

    assessment = models.ForeignKey(
        Assessment, on_delete=models.CASCADE, related_name="manual_scores", verbose_name=_("assessment")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    item = models.SlugField(_("item"))
    points = models.FloatField(_("points"))
    comment = models.TextField(_("comment"))
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("set by"),
    )
    set_at = models.DateTimeField(_("set at"), default=timezone.now)

    class Meta:
        verbose_name = _("manual score")
        verbose_name_plural = _("manual scores")
        constraints = [
            models.UniqueConstraint(fields=["assessment", "user", "item"], name="one_manual_score")
        ]

    @classmethod
    def change(
        cls, assessment: Assessment, user, item: str, points: float, comment: str, by
    ) -> "ManualScore":
        """Set a manual score; the comment is required and the change is kept."""
        if not comment.strip():
            raise ValueError("a manual score needs a comment")
        with transaction.atomic():
            current = (
                cls.objects.select_for_update().filter(assessment=assessment, user=user, item=item).first()
            )
            before = current.points if current else None
            row, _created = cls.objects.update_or_create(
                assessment=assessment,
                user=user,
                item=item,
                defaults={"points": points, "comment": comment, "set_by": by, "set_at": timezone.now()},
            )
            ManualScoreChange.objects.create(
                assessment=assessment,
                user=user,
                item=item,
                before=before,
                after=points,
                comment=comment,
                changed_by=by,
            )
            send_score_changed(ManualScore, [user.pk], assessment.course_id)
        return row


class ManualScoreChange(models.Model):
    assessment = models.ForeignKey(
        Assessment, on_delete=models.CASCADE, related_name="+", verbose_name=_("assessment")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("student")
    )
    item = models.SlugField(_("item"))
    before = models.FloatField(_("before"), null=True, blank=True)
    after = models.FloatField(_("after"))
    comment = models.TextField(_("comment"))
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        related_name="+",
        verbose_name=_("changed by"),
    )
    changed_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        verbose_name = _("manual score change")
        verbose_name_plural = _("manual score changes")
        ordering = ["changed_at", "pk"]


def lesson_use_refused(user, course, slug: str, now: datetime | None = None) -> str | None:
    """Why item ``slug`` may not be answered, submitted or revealed on its lesson page right
    now, or None.  While an exam, or an assessment that does not give feedback at once, is open
    for this student and holds the item, the lesson would give away what the assessment keeps
    back (feedback, the answer): the item is answered on the assessment's page only."""
    now = now or timezone.now()
    for assessment in Assessment.objects.filter(course=course, retired=False):
        if slug not in assessment.item_slugs():
            continue
        if not assessment.is_exam and assessment.feedback == Assessment.Feedback.IMMEDIATE:
            continue
        windows = assessment.windows_for(assessment.override_for(user))
        if windows.opens <= now <= windows.closes:
            return gettext(
                "This item is part of “%(title)s”, which is open now: answer it on the assessment's page. "
                "Here it opens again after %(closes)s."
            ) % {
                "title": assessment.title,
                "closes": timezone.localtime(windows.closes).strftime("%d.%m.%Y %H:%M"),
            }
    return None


@task(queue_name="default")
def close_exam(session_id: int) -> str:
    """Hand in an exam whose time is over (scheduled at its deadline); idempotent. A deadline
    moved later since (extra time) leaves the exam running: its own task closes it then."""
    session = AssessmentSession.objects.select_related("assessment", "user").filter(pk=session_id).first()
    if session is None or session.submitted_at is not None:
        return "already handed in"
    if timezone.now() < session.deadline:
        return "not over yet"
    session.hand_in()
    return "handed in"
