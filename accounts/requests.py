"""Types for views that only signed-in users reach."""

from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthenticatedRequest(HttpRequest):
    """The request of a view behind @login_required: its user is an account, never anonymous.
    For type checks only; Django passes its own HttpRequest."""

    user: User
