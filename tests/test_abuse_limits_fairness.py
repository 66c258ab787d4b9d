"""Abuse limits that nobody can turn against others: a stranger cannot shut enrolment, a pause
covers an IPv6 client's whole /64, refused log-in tries do not count against classmates, and an
answer refused for its address shows in the question instead of being sent twice."""

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from accounts.models import RateCounter
from courses.models import Attempt, Course

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.9"
CLASSMATE = "198.51.100.7"
PASSWORD = "a-Long-passw0rd"


def text(response) -> str:
    return response.content.decode().replace("\xa0", " ")


def login(client: Client, username: str, password: str, address: str):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(make_user, name: str) -> Client:
    client = Client()
    client.force_login(make_user(name))
    return client


# --- Enrolment: wrong codes are limited per address only, and only where a code is asked for


@pytest.fixture
def code_course(mini_course):
    Course.objects.filter(pk=mini_course.pk).update(enrollment="code", enrollment_code="ÇAY-2026")
    return mini_course


def test_wrong_codes_from_many_addresses_do_not_shut_enrolment_for_a_student_with_the_code(
    settings, code_course, make_user
):
    settings.ENROL_CODE_LIMIT_PER_IP = 100
    settings.ENROL_CODE_LIMIT_GLOBAL = 2  # a site-wide limit anybody could use up: no longer applied
    url = reverse("enroll", args=["mini"])
    guesser = signed_in(make_user, "guesser")
    for index in range(5):
        guesser.post(url, {"code": f"ÇAY-{index}"}, REMOTE_ADDR=f"192.0.2.{index + 1}")

    student = signed_in(make_user, "student")
    response = student.post(url, {"code": "ÇAY-2026"}, REMOTE_ADDR=CLASSMATE, follow=True)
    assert response.status_code == 200
    assert f"{code_course.title} kursuna katıldınız." in text(response)
    assert code_course.is_enrolled(User.objects.get(username="student"))


def test_a_course_open_to_everyone_enrols_even_from_an_address_over_the_wrong_code_limit(
    settings, code_course, make_user
):
    settings.ENROL_CODE_LIMIT_PER_IP = 1
    guesser = signed_in(make_user, "guesser")
    guesser.post(reverse("enroll", args=["mini"]), {"code": "ÇAY-2024"}, REMOTE_ADDR=ATTACKER)
    assert (
        guesser.post(reverse("enroll", args=["mini"]), {"code": "ÇAY-2025"}, REMOTE_ADDR=ATTACKER).status_code
        == 429
    )

    Course.objects.filter(pk=code_course.pk).update(enrollment="open", enrollment_code="")
    classmate = User.objects.create_user("classmate", password=PASSWORD)
    client = Client()
    client.force_login(classmate)
    response = client.post(reverse("enroll", args=["mini"]), REMOTE_ADDR=ATTACKER, follow=True)
    assert f"{code_course.title} kursuna katıldınız." in text(response)
    assert Course.objects.get(pk=code_course.pk).is_enrolled(classmate)


# --- Log-in: the pause covers an IPv6 client's /64; refused tries are not failures of the address


def test_over_ipv6_a_pause_holds_for_every_address_of_the_same_64(settings, alice):
    settings.LOGIN_PAUSE = 60
    settings.LOGIN_PAUSE_MAX = 60
    attacker = Client()
    for index in range(settings.AXES_FAILURE_LIMIT):
        login(attacker, "alice", "guess", f"2001:db8:1:2::{index + 1:x}")

    response = login(attacker, "alice", PASSWORD, "2001:db8:1:2:ffff:ffff:ffff:fffe")
    assert response.status_code == 429 and 0 < int(response["Retry-After"]) <= 60
    assert re.search(r"Lütfen \d+ (saniye|dakika) bekleyip yeniden deneyin", text(response))
    # Alice on her own network (another /64) logs in.
    assert login(Client(), "alice", PASSWORD, "2001:db8:1:3::1").status_code == 302


def test_tries_refused_during_a_pause_do_not_count_against_classmates_on_the_address(settings, alice, bob):
    settings.LOGIN_FAILURE_LIMIT_PER_IP = settings.AXES_FAILURE_LIMIT + 3
    alices_client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        login(alices_client, "alice", "guess", CLASSMATE)
    for _ in range(3):  # the right password, while her pause runs: refused, not a failure
        assert login(alices_client, "alice", PASSWORD, CLASSMATE).status_code == 429

    bobs_client = Client()
    assert login(bobs_client, "bob", PASSWORD, CLASSMATE).status_code == 302
    assert bobs_client.get(reverse("dashboard")).status_code == 200


# --- Answers: refused for the address, the page's script gets the question back with the message


def test_an_answer_refused_for_its_address_comes_back_as_the_question_with_the_message(
    settings, quiz, make_user
):
    settings.ANSWER_LIMIT_PER_IP = 1
    url = reverse("answer_question", args=["quiz", "selftest", "who-attends"])
    first, second = make_user("s1"), make_user("s2")
    for user in (first, second):
        quiz.enroll(user)
    client = Client()
    client.force_login(first)
    client.post(url, {"option": "qv"}, REMOTE_ADDR=ATTACKER, HTTP_X_REQUESTED_WITH="dikkat")

    client.force_login(second)
    counted = RateCounter.objects.get(key=f"answer:{ATTACKER}").count
    response = client.post(url, {"option": "qv"}, REMOTE_ADDR=ATTACKER, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60
    assert response["Content-Type"].startswith("text/html")
    page = text(response)
    assert 'id="q-who-attends"' in page and "data-question" in page and "<html" not in page
    assert re.search(
        r'role="alert">Şu anda ağınızdan çok fazla cevap gönderiliyor\. '
        r"Lütfen \d+ (saniye|dakika) sonra yeniden deneyin\.",
        page,
    )
    assert RateCounter.objects.get(key=f"answer:{ATTACKER}").count == counted + 1
    assert Attempt.objects.filter(user=second).count() == 0
