from django.urls import path

from . import outbox_views, views

app_name = "lti"
urlpatterns = [
    path("lti/login/", views.login_initiation, name="login"),
    path("lti/launch/", views.launch, name="launch"),
    # Deep linking requests come to their own address (the registration names it), to the same view.
    path("lti/deep-link/", views.launch, name="deep_link"),
    path("lti/jwks/", views.jwks, name="jwks"),
    path("lti/register/<str:token>/", views.register, name="register"),
    path("lti/kurs-sec/", views.choose_course, name="choose_course"),
    path("lti/icerik-sec/", views.choose_item, name="choose_item"),
    path("lti/uyeler/<int:context_pk>/", views.roster, name="roster"),
    path("lti/baglantilar/<slug:slug>/", views.course_links, name="course_links"),
    path("lti/notlar/<slug:course_slug>/", outbox_views.outbox, name="outbox"),
    path("lti/notlar/<slug:course_slug>/tekrar/", outbox_views.retry, name="outbox_retry"),
]
