"""The authoring area's pages: only the course's instructors (and staff) get in; everyone
else gets a 404, as on the course files page."""

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from courses.models import Course

from .drafts import may_author


def _get_course(request: HttpRequest, slug: str) -> Course:
    course = get_object_or_404(Course, slug=slug)
    if not may_author(request.user, course):
        raise Http404
    return course
