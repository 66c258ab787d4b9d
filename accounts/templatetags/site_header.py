"""The site header's per-user parts (templates/base.html)."""

from django import template

register = template.Library()

# A view that already knows the user's first taught course (the lesson page reads it with the
# lesson itself) sets it on the request, and the header then makes no query of its own.
TAUGHT_COURSE_ATTRIBUTE = "taught_course_slug"


@register.simple_tag(takes_context=True)
def taught_course(context) -> str:
    """The slug of the first course (by title) the user teaches, or "": the header's "Instructor"
    link goes to its dashboard."""
    request, user = context.get("request"), context.get("user")
    known = getattr(request, TAUGHT_COURSE_ATTRIBUTE, None)
    if known is not None:
        return known
    if user is None or not user.is_authenticated:
        return ""
    course = user.taught_courses.first()
    return course.slug if course else ""
