from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("panom/", views.dashboard, name="dashboard"),
    path("kurs/<slug:course_slug>/", views.course_detail, name="course"),
    path("kurs/<slug:course_slug>/kaydol/", views.enroll, name="enroll"),
    path("kurs/<slug:course_slug>/<slug:lesson_slug>/", views.lesson_detail, name="lesson"),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/tamamla/", views.lesson_complete, name="lesson_complete"
    ),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/soru/<slug:slug>/",
        views.answer_question,
        name="answer_question",
    ),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/soru/<slug:slug>/goster/",
        views.reveal_question,
        name="reveal_question",
    ),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/soru/<slug:slug>/ipucu/",
        views.open_question_hint,
        name="open_question_hint",
    ),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/alistirma/<slug:slug>/ipucu/",
        views.open_exercise_hint,
        name="open_exercise_hint",
    ),
    path(
        "kurs/<slug:course_slug>/<slug:lesson_slug>/alistirma/<slug:slug>/ipuclari/",
        views.exercise_hints,
        name="exercise_hints",
    ),
    path("cevap/<int:pk>/durum/", views.attempt_status, name="attempt_status"),
]
