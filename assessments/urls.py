from django.urls import path

from . import instructor_views, views

urlpatterns = [
    path("kurs/<slug:course_slug>/degerlendirme/<slug:slug>/", views.assessment_detail, name="assessment"),
    path("kurs/<slug:course_slug>/degerlendirme/<slug:slug>/baslat/", views.start, name="assessment_start"),
    path("kurs/<slug:course_slug>/degerlendirme/<slug:slug>/bitir/", views.finish, name="assessment_finish"),
    path(
        "kurs/<slug:course_slug>/degerlendirme/<slug:slug>/cevap/<slug:item_slug>/",
        views.answer,
        name="assessment_answer",
    ),
    path(
        "kurs/<slug:course_slug>/degerlendirme/<slug:slug>/kod/<slug:item_slug>/",
        views.submit,
        name="assessment_submit",
    ),
]

# The instructor area of an assessment (next to the course's in instructors/).
urlpatterns += [
    path(
        "egitmen/<slug:course_slug>/degerlendirme/<slug:slug>/",
        instructor_views.gradebook,
        name="assessment_gradebook",
    ),
    path(
        "egitmen/<slug:course_slug>/degerlendirme/<slug:slug>/notlar.csv",
        instructor_views.gradebook_csv,
        name="assessment_gradebook_csv",
    ),
    path(
        "egitmen/<slug:course_slug>/degerlendirme/<slug:slug>/notlar-excel.csv",
        instructor_views.gradebook_csv,
        {"excel": True},
        name="assessment_gradebook_csv_excel",
    ),
    path(
        "egitmen/<slug:course_slug>/degerlendirme/<slug:slug>/geri-bildirim/",
        instructor_views.release_feedback,
        name="assessment_release",
    ),
    path(
        "egitmen/<slug:course_slug>/degerlendirme/<slug:slug>/ogrenci/<int:user_id>/",
        instructor_views.student_detail,
        name="assessment_student",
    ),
    path(
        "egitmen/<slug:course_slug>/degerlendirme/<slug:slug>/ogrenci/<int:user_id>/ayar/",
        instructor_views.save_override,
        name="assessment_override",
    ),
    path(
        "egitmen/<slug:course_slug>/degerlendirme/<slug:slug>/ogrenci/<int:user_id>/puan/",
        instructor_views.save_manual_score,
        name="assessment_manual_score",
    ),
]
