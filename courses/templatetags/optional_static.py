"""Static files a server may lack: the code editor's bundle is built by npm, which is optional
(without it the page keeps its plain text area). ``{% static %}`` cannot be used for such a file:
with the manifest storage of production it raises for a file collectstatic never saw, and every
page that names it would be a 500."""

from django import template
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage

register = template.Library()

EDITOR_BUNDLE = "build/editor.js"


def static_url_if_exists(path: str) -> str:
    """The URL of the static file ``path``, or "" when the site does not have it."""
    try:
        url = staticfiles_storage.url(path)
    except ValueError:  # not in the manifest of the collected files
        return ""
    # Without a manifest (development, tests) the files are served from the finders.
    return url if staticfiles_storage.exists(path) or finders.find(path) else ""


@register.simple_tag
def static_if_exists(path: str) -> str:
    """``{% static_if_exists 'build/editor.js' as url %}{% if url %}<script src="{{ url }}">…``"""
    return static_url_if_exists(path)
