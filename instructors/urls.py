from django.urls import path

from . import coursefiles, mining_views, views

app_name = "instructors"
urlpatterns = [
    # Before the course pages, so that "kurs-yukle" is never taken for a course slug.
    path("kurs-yukle/", coursefiles.upload, name="upload"),
    path("kurs-yukle/<uuid:result_id>/", coursefiles.upload_status, name="upload_status"),
    path("<slug:course_slug>/", views.dashboard, name="dashboard"),
    path("<slug:course_slug>/notlar/", views.gradebook, name="gradebook"),
    path("<slug:course_slug>/dosyalar/", coursefiles.course_files, name="course_files"),
    path("<slug:course_slug>/dosyalar.zip", coursefiles.course_zip, name="course_zip"),
    path("<slug:course_slug>/notlar.csv", views.gradebook_csv, name="gradebook_csv"),
    path(
        "<slug:course_slug>/notlar-excel.csv",
        views.gradebook_csv,
        {"excel": True},
        name="gradebook_csv_excel",
    ),
    path("<slug:course_slug>/oge/<str:kind>/<slug:slug>/", views.item_stats, name="item"),
    path(
        "<slug:course_slug>/alistirma/<slug:slug>/ogrenci/<int:user_id>/",
        views.student_submissions,
        name="submissions",
    ),
    path(
        "<slug:course_slug>/alistirma/<slug:slug>/yeniden-notlandir/",
        views.regrade_start,
        name="regrade_start",
    ),
    path("<slug:course_slug>/alistirma/<slug:slug>/dene/", views.test_item, name="test_item"),
    path(
        "<slug:course_slug>/soru/<slug:slug>/ogrenci/<int:user_id>/",
        views.question_attempts,
        name="attempts",
    ),
    path("<slug:course_slug>/soru/<slug:slug>/dene/", views.test_question, name="test_question"),
    path("<slug:course_slug>/yeniden-notlandirma/<int:pk>/", views.regrade_detail, name="regrade"),
    path("<slug:course_slug>/onizleme/<slug:lesson_slug>/", views.lesson_preview, name="preview"),
    path("<slug:course_slug>/yanilgi-adaylari/", mining_views.course_candidates, name="mining_course"),
    path(
        "<slug:course_slug>/alistirma/<slug:slug>/yanilgi-adaylari/",
        mining_views.exercise_candidates,
        name="mining",
    ),
    path(
        "<slug:course_slug>/alistirma/<slug:slug>/yanilgi-adaylari/<slug:key>/",
        mining_views.export_candidate,
        name="mining_export",
    ),
]
