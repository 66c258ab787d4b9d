from django.contrib import admin
from django.urls import include, path
from django.utils.translation import gettext_lazy as _

admin.site.site_header = _("Dikkat administration")
admin.site.site_title = _("Dikkat")
admin.site.index_title = _("Site administration")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/", include("accounts.urls")),
    path("egitmen/<slug:course_slug>/yazarlik/", include("studio.urls")),
    path("egitmen/", include("instructors.urls")),
    path("", include("lti.urls")),
    path("", include("assessments.urls")),
    path("", include("grader.urls")),
    path("", include("courses.urls")),
]

handler400 = "config.errors.bad_request"
