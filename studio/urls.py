from django.urls import path

from . import question_views, views

app_name = "studio"
urlpatterns = [
    path("", views.outline, name="outline"),
    path("dosya/<path:path>", views.edit_file, name="edit"),
    path("onizle/", views.preview, name="preview"),
    path("yayinla/", views.publish_view, name="publish"),
    path("yayin/<uuid:result_id>/", views.publish_status, name="publish_status"),
    path("yayin/<uuid:result_id>/yeniden-notlandir/", views.regrade_answers, name="regrade_answers"),
    path("yeniden-notlandirma/<int:pk>/", views.answer_regrade_status, name="answer_regrade"),
    path("surumler/", views.revisions, name="revisions"),
    path("surumler/<int:number>/geri-don/", views.revert_view, name="revert"),
    path("yeni-ders/", views.new_lesson, name="new_lesson"),
    path("ders/<str:folder>/yeni-alistirma/", views.new_exercise, name="new_exercise"),
    path("ders/<str:folder>/emekliye-ayir/", views.retire, name="retire_lesson"),
    path("ders/<str:folder>/oge/<slug:slug>/emekliye-ayir/", views.retire, name="retire_item"),
    path("sirala/", views.move, name="move"),
    path("kontrol-et/<path:folder>", views.start_check, name="start_check"),
    path("kontrol/<int:pk>/", views.check_status, name="check"),
    path("yeni-dosya/<path:folder>", views.new_file, name="new_file"),
    path("sorular/<str:lesson>/", question_views.lesson_questions, name="questions"),
    path("sorular/<str:lesson>/yeni-soru/", question_views.question_new, name="question_new"),
    path("sorular/<str:lesson>/soru/<slug:slug>/", question_views.question_edit, name="question_edit"),
    path("soru-onizleme/<str:token>/", question_views.question_answer, name="question_answer"),
]
