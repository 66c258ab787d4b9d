from django.urls import path

from . import views

urlpatterns = [
    path("kurs/<slug:course_slug>/degerlendirme/<slug:slug>/", views.assessment_detail, name="assessment"),
    path("kurs/<slug:course_slug>/degerlendirme/<slug:slug>/baslat/", views.start, name="assessment_start"),
    path("kurs/<slug:course_slug>/degerlendirme/<slug:slug>/bitir/", views.finish, name="assessment_finish"),
]
