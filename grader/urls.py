from django.urls import path

from . import views

urlpatterns = [
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/alistirma/<slug:slug>/gonder/",
        views.submit_code,
        name="submit_code",
    ),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/alistirma/<slug:slug>/gecmis/",
        views.history,
        name="submission_history",
    ),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/alistirma/<slug:slug>/cozum/",
        views.reveal_solution,
        name="reveal_solution",
    ),
    path("gonderim/<int:pk>/durum/", views.submission_status, name="submission_status"),
]
