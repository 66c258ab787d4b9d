"""Error pages that say what happened, where Django's defaults cannot know it."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.views.defaults import bad_request as django_bad_request


def bad_request(request, exception, template_name="400.html"):
    """A body over DATA_UPLOAD_MAX_MEMORY_SIZE (say, a huge paste into the code editor) is
    refused before any view runs: say that and the limit, not "we could not read that"."""
    if isinstance(exception, RequestDataTooBig):
        message = _(
            "What you sent is larger than %(limit)s, so it was not read and nothing was saved. "
            "Code sent for grading may be at most a few dozen kilobytes: check what was pasted."
        ) % {"limit": filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)}
        return TemplateResponse(request, template_name, {"message": message}, status=400)
    return django_bad_request(request, exception, template_name)
