"""Accounts: sign up, log in and out, reset a password, throttled failed logins."""

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_signup_logs_the_new_user_in(client):
    response = client.post(
        reverse("signup"),
        {
            "username": "ayşe",
            "email": "ayse@example.com",
            "password1": "çok-Gizli-parola-42",
            "password2": "çok-Gizli-parola-42",
        },
    )
    assert response.status_code == 302
    assert User.objects.filter(username="ayşe").exists()
    assert client.get(reverse("dashboard")).status_code == 200


def test_signup_shows_field_errors_in_turkish(client):
    response = client.post(reverse("signup"), {"username": "", "password1": "a", "password2": "b"})
    assert response.status_code == 200
    assert "Bu alan zorunludur." in response.text
    assert not User.objects.exists()


def test_signup_field_errors_in_english_after_switching(client):
    client.post(reverse("set_language"), {"language": "en", "next": "/"})
    response = client.post(reverse("signup"), {"username": "", "password1": "a", "password2": "b"})
    assert "This field is required." in response.text


def test_login_and_logout(client, alice):
    response = client.post(reverse("login"), {"username": "alice", "password": "a-Long-passw0rd"})
    assert response.status_code == 302
    assert client.get(reverse("dashboard")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("dashboard")).status_code == 302


def test_repeated_failed_logins_are_throttled_even_with_the_right_password(client, alice, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "alice", "password": "a-Long-passw0rd"})
    assert response.status_code == 429
    assert "Çok fazla" in response.text
    assert client.get(reverse("dashboard")).status_code == 302


def test_password_reset_sends_a_link_that_sets_a_new_password(client, alice):
    client.post(reverse("password_reset"), {"email": "alice@example.com"})
    assert len(mail.outbox) == 1
    link = re.search(r"https?://[^/]+(/\S+)", mail.outbox[0].body).group(1)
    response = client.get(link, follow=True)
    form_url = response.redirect_chain[-1][0]
    client.post(form_url, {"new_password1": "Yeni-parola-2026!", "new_password2": "Yeni-parola-2026!"})
    alice.refresh_from_db()
    assert alice.check_password("Yeni-parola-2026!")


def test_demo_accounts_print_passwords_once(capsys):
    from django.core.management import call_command

    call_command("demo_accounts")
    first = capsys.readouterr().out
    assert re.search(r"student\s+\S{8,}", first)
    call_command("demo_accounts")
    assert "exist" in capsys.readouterr().out
    assert User.objects.get(username="admin").is_superuser
    instructor = User.objects.get(username="instructor")
    assert instructor.is_staff and not instructor.is_superuser


def test_an_enrolled_student_lands_on_the_dashboard_and_a_new_one_on_the_course_list(
    client, make_user, mini_course
):
    from django.urls import reverse

    enrolled = make_user("kayitli")
    mini_course.enroll(enrolled)
    response = client.post(reverse("login"), {"username": "kayitli", "password": "a-Long-passw0rd"})
    assert response.url == reverse("dashboard")
    client.logout()
    make_user("yeni")
    response = client.post(reverse("login"), {"username": "yeni", "password": "a-Long-passw0rd"})
    assert response.url == "/"
