from django.urls import path

from . import views

app_name = "studio"
urlpatterns = [
    path("", views.outline, name="outline"),
    path("dosya/<path:path>", views.edit_file, name="edit"),
    path("onizle/", views.preview, name="preview"),
    path("yayinla/", views.publish_view, name="publish"),
    path("yayin/<uuid:result_id>/", views.publish_status, name="publish_status"),
    path("surumler/", views.revisions, name="revisions"),
    path("surumler/<int:number>/geri-don/", views.revert_view, name="revert"),
]
