from django.urls import include, path

from . import views

urlpatterns = [
    path("kayit/", views.signup, name="signup"),
    path("login/", views.Login.as_view(), name="login"),
    # login, logout, password change and reset, with our templates in templates/registration/.
    path("", include("django.contrib.auth.urls")),
]
