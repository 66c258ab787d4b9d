from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from courses.models import Enrollment, LessonProgress

from .forms import SignupForm
from .ratelimit import SIGNUPS, RateLimited


def _safe_next(request: HttpRequest) -> str:
    """The `next` page if it is a path on this site; anything else (foo, //evil.com) is dropped."""
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if next_url.startswith("/") and url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return next_url
    return ""


def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    next_url = _safe_next(request)
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            SIGNUPS.check(request)
        except RateLimited as refused:
            # The form comes back filled in (passwords aside) with the message, not a bare 429.
            form.add_error(None, str(refused))
            response = render(
                request, "registration/signup.html", {"form": form, "next": next_url}, status=429
            )
            response["Retry-After"] = str(refused.retry_after)
            return response
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, _("Welcome, %(name)s! Choose a course to begin.") % {"name": user.username})
        return HttpResponseRedirect(next_url) if next_url else redirect("home")
    return render(request, "registration/signup.html", {"form": form, "next": next_url})


class Login(LoginView):
    """Django's log-in; without a ``next`` page, a student enrolled in a course lands on
    İlerlemem ("continue where you left off", or where to begin), not on the course list."""

    def get_default_redirect_url(self) -> str:
        user = self.request.user
        if not user.is_authenticated:
            return super().get_default_redirect_url()
        started = LessonProgress.objects.filter(user=user, lesson__course__retired=False).exists()
        if started or Enrollment.objects.filter(user=user, course__retired=False).exists():
            return reverse("dashboard")
        return super().get_default_redirect_url()
