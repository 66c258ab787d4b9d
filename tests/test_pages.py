"""Student pages: course list, enrolment, lessons in order, progress, friendly 404s."""

import pytest
from django.urls import reverse

from courses.models import Course, LessonProgress

pytestmark = pytest.mark.django_db


def test_home_lists_active_courses(client, mini_course):
    response = client.get("/")
    assert response.status_code == 200
    assert "Mini kurs" in response.text


def test_course_page_lists_lessons_in_order_and_asks_anonymous_users_to_log_in(client, mini_course):
    response = client.get(reverse("course", args=["mini"]))
    text = response.text
    assert text.index("Birinci ders") < text.index("İkinci ders")
    assert "Kursa katılmak için" in text and reverse("login") + "?next=" in text


def test_lesson_requires_login(client, mini_course):
    response = client.get(reverse("lesson", args=["mini", "first"]))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_lesson_is_closed_until_the_student_enrols(client, alice, mini_course):
    client.force_login(alice)
    response = client.get(reverse("lesson", args=["mini", "first"]))
    assert response.status_code == 302 and response.url == reverse("course", args=["mini"])
    response = client.post(reverse("enroll", args=["mini"]))
    assert response.url == reverse("lesson", args=["mini", "first"])
    response = client.get(reverse("lesson", args=["mini", "first"]))
    assert response.status_code == 200
    assert "<math" in response.text
    assert reverse("lesson", args=["mini", "second"]) in response.text  # next lesson link


def test_enrolment_by_code_rejects_a_wrong_code(client, alice, mini_course):
    Course.objects.filter(pk=mini_course.pk).update(enrollment="code", enrollment_code="ÇAY-2026")
    client.force_login(alice)
    client.post(reverse("enroll", args=["mini"]), {"code": "wrong"})
    assert not mini_course.is_enrolled(alice)
    client.post(reverse("enroll", args=["mini"]), {"code": "ÇAY-2026"})
    assert mini_course.is_enrolled(alice)


def test_enrol_is_post_only(client, alice, mini_course):
    client.force_login(alice)
    assert client.get(reverse("enroll", args=["mini"])).status_code == 405
    assert not mini_course.is_enrolled(alice)


def test_visits_and_completion_show_on_the_dashboard(client, alice, mini_course):
    mini_course.enroll(alice)
    client.force_login(alice)
    client.get(reverse("lesson", args=["mini", "first"]))
    response = client.post(reverse("lesson_complete", args=["mini", "first"]))
    assert response.url == reverse("lesson", args=["mini", "second"])
    assert LessonProgress.objects.get(user=alice, lesson__slug="first").completed_at
    dashboard = client.get(reverse("dashboard")).text
    assert "2 dersten 1 tanesi bitti olarak işaretlendi" in dashboard
    assert "İkinci ders" in dashboard  # where to continue


def test_one_students_progress_is_not_anothers(client, alice, bob, mini_course):
    mini_course.enroll(alice)
    mini_course.enroll(bob)
    client.force_login(alice)
    client.post(reverse("lesson_complete", args=["mini", "first"]))
    client.force_login(bob)
    assert "2 dersten 0 tanesi bitti olarak işaretlendi" in client.get(reverse("dashboard")).text


def test_retired_lesson_is_a_404(client, alice, mini_course):
    mini_course.enroll(alice)
    mini_course.lessons.filter(slug="second").update(retired=True)
    client.force_login(alice)
    assert client.get(reverse("lesson", args=["mini", "second"])).status_code == 404


def test_unknown_page_is_a_friendly_404_in_turkish_by_default(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert "Sayfa bulunamadı" in response.text
    assert '<html lang="tr">' in response.text


def test_unknown_page_is_in_english_after_switching(client):
    client.post(reverse("set_language"), {"language": "en", "next": "/"})
    response = client.get("/no-such-page/")
    assert "Page not found" in response.text
    assert '<html lang="en">' in response.text


def test_browser_language_alone_does_not_switch_away_from_turkish(client):
    response = client.get("/", HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9")
    assert '<html lang="tr">' in response.text


def test_pages_send_a_content_security_policy_allowing_only_own_scripts(client):
    response = client.get("/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_signing_up_and_enrolling_are_two_different_words(client, mini_course):
    """ "Kaydol" meant both; now an account is created ("Hesap oluştur") and a course joined ("katıl")."""
    page = client.get(reverse("course", args=["mini"])).text
    assert "Kursa katılmak için" in page and "hesap oluşturun" in page
    assert "Hesap oluştur" in client.get(reverse("signup")).text
    assert "aydol" not in page
