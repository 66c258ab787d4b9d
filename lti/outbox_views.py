"""The instructor's page of grade passback: for a course, each LMS student's score per LMS link
as sent, waiting or failing, with the platform's error, and "send again"."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.requests import AuthenticatedRequest
from courses.models import Course

from .outbox import Delivery, ScoreOutbox
from .passback import course_rows


def _get_course_for_instructor(request: AuthenticatedRequest, slug: str) -> Course:
    course = get_object_or_404(Course.objects.active(), slug=slug)
    if not course.is_instructor(request.user):
        raise Http404  # as the other instructor pages: the page's existence is not confirmed
    return course


@login_required
def outbox(request: AuthenticatedRequest, course_slug: str) -> HttpResponse:
    course = _get_course_for_instructor(request, course_slug)
    rows = course_rows(course)
    counts = {state: sum(row.delivery == state for row in rows) for state in Delivery.values}
    return render(
        request,
        "lti/outbox.html",
        {
            "course": course,
            "rows": rows,
            "sent": counts[Delivery.SENT],
            "pending": counts[Delivery.PENDING],
            "failing": counts[Delivery.FAILING],
        },
    )


@login_required
@require_POST
def retry(request: AuthenticatedRequest, course_slug: str) -> HttpResponse:
    """Send failing scores again: one (``row``) or all of the course's."""
    course = _get_course_for_instructor(request, course_slug)
    failing = [row.pk for row in course_rows(course) if row.delivery == Delivery.FAILING]
    wanted = request.POST.get("row", "")
    if wanted:
        if not wanted.isdigit() or int(wanted) not in failing:
            messages.error(request, _("That score is not failing any more; the list below is up to date."))
            return redirect("lti:outbox", course_slug=course.slug)
        failing = [int(wanted)]
    queued = ScoreOutbox.objects.requeue(failing)
    if queued:
        messages.success(
            request,
            _("%(count)s scores will be sent again in a moment. Reload the page to see how it went.")
            % {"count": queued},
        )
    else:
        messages.info(request, _("No failing scores to send again."))
    return redirect("lti:outbox", course_slug=course.slug)
