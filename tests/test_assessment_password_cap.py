"""An exam's password cannot be guessed with many accounts: after a number of wrong passwords
for one assessment (all accounts together) within the hour, nobody's password is compared
until the hour ends (429, Retry-After, a Turkish message saying how long). Right passwords do
not count, and a student who started already still gets back in."""

import pytest
import time_machine
from django.test import Client
from django.urls import reverse
from test_assessments import at, course, course_dir, exam, long_sessions  # noqa: F401 (fixtures)

from assessments.models import AssessmentSession

START = reverse("assessment_start", args=["mini", "sinav"])


@pytest.fixture
def cap(settings):
    settings.ASSESSMENT_PASSWORD_LIMIT = 5
    settings.LANGUAGE_CODE = "tr"


def student(make_user, course, name: str) -> Client:  # noqa: F811 (the fixture)
    user = make_user(name)
    course.enroll(user)
    client = Client()
    client.force_login(user)
    return client


def test_many_accounts_cannot_guess_an_exams_password(cap, make_user, course, exam):  # noqa: F811
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        early = student(make_user, course, "erken")
        assert early.post(START, {"password": "gizli"}).status_code == 302
        for i in range(3):  # right passwords are not guesses: they do not use up the cap
            assert (
                student(make_user, course, f"dogru{i}").post(START, {"password": "gizli"}).status_code == 302
            )
        for i in range(5):  # five accounts, one wrong guess each: each under its own limit
            page = student(make_user, course, f"tahmin{i}").post(
                START, {"password": f"yanlis{i}"}, follow=True
            )
            assert "Parola doğru değil." in page.text
        guesser = student(make_user, course, "tahmin5")
        response = guesser.post(START, {"password": "yanlis5"})
        assert response.status_code == 429
        assert response["Retry-After"] == "3600"
        assert "Bu değerlendirme için çok fazla yanlış parola denendi. 60 dakika sonra yeniden deneyin" in (
            response.text
        )
        assert 'name="password"' in response.text  # the start page, with the message on it

    with time_machine.travel(at("2026-12-15 10:35"), tick=False):
        # The right password is not even compared for someone who has not started...
        late = student(make_user, course, "gec")
        response = late.post(START, {"password": "gizli"})
        assert response.status_code == 429 and response["Retry-After"] == "1800"
        assert not AssessmentSession.objects.filter(user__username="gec").exists()
        # ...but a student who started already gets back in with it.
        assert early.post(START, {"password": "gizli"}).status_code == 302

    with time_machine.travel(at("2026-12-15 11:06"), tick=False):  # the hour is over
        assert late.post(START, {"password": "gizli"}).status_code == 302
    assert AssessmentSession.objects.filter(user__username="gec").exists()
