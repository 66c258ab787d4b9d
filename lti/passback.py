"""Grade passback: which score changes go to an LMS, what score a link gets, and sending one
outbox row (lti.outbox.ScoreOutbox) to the platform with lti.ags.

A score change (jobs.signals.score_changed, sent where a counted score is stored) becomes an
outbox row, after its transaction commits, for every LMS link with a grade service in that
course whose target it touches, in the LMS courses the student belongs to (``graded_links``:
a student of one section never gets a score in another section's column); for everybody
else it costs one query. The row is sent by a worker under the queue's lease:

- only the newest row of a (link, user) is sent, an older one is marked superseded;
- the score is read at sending time, the AGS ``timestamp`` is the row's ``changed_at``;
- the whole send (token, line item, score) ends within SEND_SECONDS, below its lease;
- no answer, a 5xx, 401 or 429: tried again later, waiting 30 s, 1 min, 2 min… up to an hour
  (``LTI_OUTBOX_RETRY_SECONDS``, ``LTI_OUTBOX_RETRY_MAX_SECONDS``), failing after
  ``LTI_OUTBOX_MAX_TRIES`` tries (a try: a send that called the platform; "send again" gives
  them all back); any other 4xx fails at once (the instructor sends it again by hand once
  the cause is fixed).

What a link scores: a link to a lesson, the student's kept scores of the lesson's items (each
0–1, best or last answer as the course counts it, as the gradebook and İlerlemem do) out of
the number of items; a link to the course, the same over all of its lessons. Work an
assessment still holds back is left out, as on the lesson pages, and the score is sent again
when the assessment shows it.
"""

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from assessments.feedback import held_back
from assessments.scoring import student_scores
from courses.models import Course
from courses.progress import course_progress

from . import ags, http
from .http import PlatformUnreachable
from .models import LtiUser, Membership, ResourceLink
from .outbox import Delivery, ScoreOutbox
from .services import ServiceFailed

log = logging.getLogger("lti")

# One send's time budget: an access token, the line item (found, else made) and the score, at
# most four calls, each within lti.http's own DEADLINE but all of them within this; the lease is
# this and GRADING_LEASE_MARGIN, so a send always ends before another worker may take the row.
SEND_SECONDS = 30
BUSY_RETRY_SECONDS = 1  # another send was still making the link's line item: look again soon
RETRIED_STATUSES = {0, 401, 408, 429}  # and every 5xx


@dataclass
class LinkScore:
    given: float
    maximum: float
    label: str
    # The earliest time held-back work of this student becomes visible (the score changes then).
    shown_later: datetime | None = None


class NothingToSend(Exception):
    """The link has no score to send (a lesson without graded items)."""


class HeldUntil(Exception):
    """The assessment shows no scores to the student before ``until``: neither does the LMS."""

    def __init__(self, until: datetime):
        super().__init__(f"scores shown after {until.isoformat()}")
        self.until = until


# --- score changes -> rows --------------------------------------------------------------------


def graded_links(user_ids: list[int], course_id: int) -> list[tuple[ResourceLink, int, str]]:
    """(link, user id, LMS user id) for each link with a grade service in the LMS courses of the
    course that the user belongs to: those whose roster (Membership) lists them as an active
    member. A user no roster lists as active (no roster read yet) gets the LMS courses of the
    course on their platform, but none whose roster lists them as dropped. A student of one
    section (one LMS course) never gets a score in another section's grade column.
    One query when none of the users came from an LMS."""
    accounts = set(
        LtiUser.objects.filter(user_id__in=user_ids, platform__contexts__course_id=course_id).values_list(
            "platform_id", "user_id", "sub"
        )
    )
    if not accounts:
        return []
    links = [
        link
        for link in ResourceLink.objects.filter(
            context__course_id=course_id, context__platform_id__in={platform for platform, _, _ in accounts}
        ).select_related("context", "exercise")
        # no grade column, or the LMS does not let Dikkat post scores
        if ags.SCORE_SCOPE in (link.ags_scopes or []) and (link.lineitem_url or link.lineitems_url)
    ]
    if not links:
        return []
    active: dict[tuple[int, str], set[int]] = {}
    dropped: dict[tuple[int, str], set[int]] = {}
    # Every LMS course of the course counts, also those without a grade column: a student of a
    # section whose links send no grades is a member there, not of the other sections.
    memberships = Membership.objects.filter(
        context__course_id=course_id,
        context__platform_id__in={platform for platform, _, _ in accounts},
        sub__in={sub for _, _, sub in accounts},
    ).values_list("context__platform_id", "sub", "context_id", "dropped_at")
    for platform_id, sub, context_id, dropped_at in memberships:
        (dropped if dropped_at else active).setdefault((platform_id, sub), set()).add(context_id)
    found = []
    for link in links:
        for platform_id, user_id, sub in sorted(accounts):
            if platform_id != link.context.platform_id:
                continue
            member_of = active.get((platform_id, sub))
            if member_of is not None:
                if link.context_id in member_of:
                    found.append((link, user_id, sub))
            elif link.context_id not in dropped.get((platform_id, sub), set()):
                found.append((link, user_id, sub))
    return found


def touches(link: ResourceLink, lesson_id: int | None) -> bool:
    """Whether a change in ``lesson_id`` (None: not one lesson's) can change the link's score.
    An assessment's total can change with any of the course's items."""
    if lesson_id is None or link.assessment_id is not None:
        return True
    if link.exercise_id is not None:
        return link.exercise.lesson_id == lesson_id  # type: ignore[union-attr]
    return link.lesson_id is None or link.lesson_id == lesson_id


def note_changes(
    user_ids: list[int], course_id: int, lesson_id: int | None, at: datetime | None = None
) -> int:
    """Queue a row for every graded link the change touches; how many were noted."""
    at = at or timezone.now()
    noted = 0
    for link, user_id, sub in graded_links(user_ids, course_id):
        if touches(link, lesson_id):
            ScoreOutbox.objects.note_change(link.pk, user_id, sub, at)
            noted += 1
    return noted


def on_score_changed(sender, user_ids, course_id, lesson_id=None, **kwargs) -> None:
    """The score_changed receiver: notes the change once its transaction has committed (a
    rolled-back change sends nothing). A failure here never fails the grading that sent it."""

    def note() -> None:
        try:
            note_changes(list(user_ids), course_id, lesson_id)
        except Exception:
            log.exception("could not note a score change of %s in course %s for the LMS", user_ids, course_id)

    transaction.on_commit(note)


# --- what a link scores --------------------------------------------------------------------


def link_score(link: ResourceLink, user) -> LinkScore:
    """The score the link's grade column gets for ``user`` now (none once its LMS course was
    unlinked, or for a target of another Dikkat course: a link keeps its target)."""
    course = link.context.course
    if course is None:
        raise NothingToSend("the LMS course is no longer linked to a Dikkat course")
    target = link.assessment or link.exercise or link.lesson
    if target is not None and target.course_id != course.pk:
        raise NothingToSend("the link opens an item of another Dikkat course")
    if link.assessment_id is not None:
        return _assessment_score(link, user)
    hidden = held_back(user, course)
    progress = course_progress(user, course, (hidden.answers, hidden.submissions))
    if link.exercise_id is not None:
        exercise = link.exercise
        rows = [row for row in progress.lessons if row.lesson.pk == exercise.lesson_id]  # type: ignore[attr-defined, union-attr]
        # The lesson's items in the order its progress row lists them.
        items = [
            mine
            for row in rows
            for item, mine in zip(row.lesson.items(), row.items, strict=True)  # type: ignore[attr-defined]
            if item.is_exercise and item.pk == link.exercise_id
        ]
        label = exercise.title  # type: ignore[union-attr]
    elif link.lesson_id is not None:
        rows = [row for row in progress.lessons if row.lesson.pk == link.lesson_id]  # type: ignore[attr-defined]
        items = [item for row in rows for item in row.items]
        label = link.lesson.title if link.lesson else link.title
    else:
        items = progress.items
        label = course.title
    if not items:
        raise NothingToSend("no graded items")
    later = [note.until for note in hidden.notes.values() if note.until is not None]
    return LinkScore(
        given=round(sum(item.score or 0.0 for item in items), 4),
        maximum=float(len(items)),
        label=f"Dikkat: {label or link.title or course.title}",
        shown_later=min(later) if later else None,
    )


def _assessment_score(link: ResourceLink, user) -> LinkScore:
    """An assessment's total as its gradebook computes it (points, late credit, manual scores),
    out of the points the student's items are worth; HeldUntil while it shows no scores yet."""
    assessment = link.assessment
    assert assessment is not None
    windows = assessment.windows_for(assessment.override_for(user))
    if assessment.feedback_shown(user, windows=windows) == "received":
        raise HeldUntil(windows.closes)
    scores = student_scores(assessment, [user])[0]
    if not scores.possible:
        raise NothingToSend("the assessment has no items")
    return LinkScore(given=scores.total, maximum=float(scores.possible), label=f"Dikkat: {assessment.title}")


# --- sending a row -------------------------------------------------------------------------


def _retry_delay(attempts: int) -> timedelta:
    first, longest = settings.LTI_OUTBOX_RETRY_SECONDS, settings.LTI_OUTBOX_RETRY_MAX_SECONDS
    return timedelta(seconds=min(longest, first * 2 ** max(0, attempts - 1)))


def _status(error: Exception) -> int | None:
    """The platform's HTTP status behind an error (0: no answer; None: not the platform's)."""
    while error is not None:
        if isinstance(error, PlatformUnreachable):
            return error.status
        error = error.__cause__  # type: ignore[assignment]
    return None


def is_retried(status: int | None) -> bool:
    return status is not None and (status in RETRIED_STATUSES or status >= 500)


@dataclass
class Sent:
    outcome: str  # sent, later, held, failed, superseded, skipped, not yet, stale
    # Held-back work of the student is shown then: their scores are to be noted again at that
    # time (of ``user_id`` in ``course_id``).
    again_at: datetime | None = None
    user_id: int = 0
    course_id: int = 0


def send_claimed(row_id: int) -> Sent:
    """The task body: claim the row, send its link's score if it is the newest row, store
    what happened (only while our lease holds).

    The whole send (the access token, finding or making the line item, the score: up to four
    calls) ends within SEND_SECONDS, shorter than the lease, so no second worker takes the row
    over while this one still talks to the platform. ``attempts`` counts the sends that called
    the platform: a claim that finds the row superseded, its scores held back or nothing to
    send, or another send still making the line item, is no try."""
    row = ScoreOutbox.objects.filter(pk=row_id).first()
    if row is None or row.status != ScoreOutbox.Status.QUEUED:
        return Sent("skipped")
    now = timezone.now()
    if row.next_try_at is not None and row.next_try_at > now:
        return Sent("not yet")  # a task sent early (the sweeper's); the one due then comes later
    until = time.monotonic() + SEND_SECONDS
    lease = timedelta(seconds=SEND_SECONDS + settings.GRADING_LEASE_MARGIN)
    token = ScoreOutbox.objects.claim(row_id, lease)
    if token is None:
        return Sent("skipped")
    # Read after the claim: a change noted before it moved changed_at, none can after.
    row = ScoreOutbox.objects.select_related(
        "link__context__platform",
        "link__context__course",
        "link__lesson",
        "link__exercise",
        "link__assessment",
        "user",
    ).get(pk=row_id)
    if ScoreOutbox.objects.newer_than(row).exists():
        ScoreOutbox.objects.finish(row_id, token, superseded=True, last_error="")
        return Sent("superseded")
    try:
        score = link_score(row.link, row.user)
    except HeldUntil as held:
        # Not a try against the platform: the row simply waits until the scores are shown.
        ScoreOutbox.objects.retry_later(row_id, token, held.until, "")
        return Sent("held")
    except NothingToSend as error:
        ScoreOutbox.objects.give_up(row_id, token, f"nothing to send: {error}")
        return Sent("failed")
    # Counted before the calls: a worker that dies while the platform answers has tried.
    tried = row.attempts + 1
    if not ScoreOutbox.objects.holding(row_id, token).update(attempts=tried, last_try_at=timezone.now()):
        return Sent("stale")
    try:
        with http.deadline(until):
            ags.lineitem(row.link, score.label, score.maximum, until)
            ags.send_score(row.link, row.lms_user_id, score.given, score.maximum, row.changed_at)
    except ags.LineItemBusy as busy:
        # Another student's send of the link makes its line item: this one called nothing.
        when = timezone.now() + timedelta(seconds=BUSY_RETRY_SECONDS)
        ScoreOutbox.objects.retry_later(
            row_id, token, when, str(busy), attempts=row.attempts, last_try_at=row.last_try_at
        )
        return Sent("later")
    except (PlatformUnreachable, ServiceFailed) as error:
        status = _status(error)
        if is_retried(status) and tried < settings.LTI_OUTBOX_MAX_TRIES:
            when = timezone.now() + _retry_delay(tried)
            ScoreOutbox.objects.retry_later(row_id, token, when, str(error))
            log.warning("score %s for the LMS not sent (try %s), again at %s: %s", row_id, tried, when, error)
            return Sent("later")
        ScoreOutbox.objects.give_up(row_id, token, str(error))
        log.error("score %s for the LMS failed: %s", row_id, error)
        return Sent("failed")
    stored = ScoreOutbox.objects.finish(
        row_id,
        token,
        score=score.given,
        maximum=score.maximum,
        sent_at=timezone.now(),
        last_error="",
        next_try_at=None,
    )
    if not stored:
        return Sent("stale")
    return Sent("sent", score.shown_later, row.user_id, row.link.context.course_id or 0)


# --- what instructors and the command see -----------------------------------------------------

STATE_ORDER = {Delivery.FAILING: 0, Delivery.PENDING: 1, Delivery.SENT: 2}


def course_rows(course: Course | None = None) -> list[ScoreOutbox]:
    """The newest row of each (link, student), of one course or all: failing first, then
    waiting, then sent; the latest change first within each."""
    rows = ScoreOutbox.objects.newest().select_related(
        "link__context__course", "link__lesson", "link__exercise", "link__assessment", "user"
    )
    if course is not None:
        rows = rows.filter(link__context__course=course)
    return sorted(
        rows, key=lambda row: (STATE_ORDER.get(row.delivery, 3), -row.changed_at.timestamp(), -row.pk)
    )


def target_name(link: ResourceLink) -> str:
    """What a link's grade column scores, as the command names it: ``course/lesson``,
    ``course/exercise:slug``, ``course/assessment:slug`` or ``course``."""
    course = link.context.course.slug if link.context.course else link.context.context_id
    if link.exercise is not None:
        return f"{course}/exercise:{link.exercise.slug}"
    if link.assessment is not None:
        return f"{course}/assessment:{link.assessment.slug}"
    return f"{course}/{link.lesson.slug}" if link.lesson else course
