"""Abuse limits as a student sees them: behind the school's proxy, one attacker is slowed down
while classmates log in, sign up, enrol, answer and send code; refusals say how long to wait."""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.db.models import F
from django.test import Client, RequestFactory
from django.urls import reverse

from accounts import ratelimit
from courses.models import Attempt, Course
from grader.models import Submission

pytestmark = pytest.mark.django_db

PROXY = "10.0.0.2"  # the documented reverse proxy: every request reaches Django from here
ATTACKER = "203.0.113.9"
CLASSMATE = "198.51.100.7"
PASSWORD = "a-Long-passw0rd"


def via_proxy(address: str, forged: str = "") -> dict:
    """What one proxy that appends to X-Forwarded-For passes on for a client at `address`."""
    return {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": f"{forged}, {address}" if forged else address}


def text(response) -> str:
    return response.content.decode().replace("\xa0", " ")


def login(client: Client, username: str, password: str, address: str, **extra):
    return client.post(
        reverse("login"), {"username": username, "password": password}, **via_proxy(address, **extra)
    )


@pytest.fixture
def behind_proxy(settings):
    settings.TRUSTED_PROXIES = 1
    return settings


# --- 1. Log-in: the right address behind the proxy, (username, address) pairs, spraying, a growing pause


def test_behind_the_proxy_a_classmate_logs_in_while_an_attacker_on_her_username_waits(behind_proxy, alice):
    attacker, classmate = Client(), Client()
    for _ in range(behind_proxy.AXES_FAILURE_LIMIT):
        login(attacker, "alice", "guess", ATTACKER)
    assert login(attacker, "alice", PASSWORD, ATTACKER).status_code == 429

    response = login(classmate, "alice", PASSWORD, CLASSMATE)
    assert response.status_code == 302
    assert classmate.get(reverse("dashboard")).status_code == 200


def test_a_forged_forwarded_for_header_does_not_buy_more_guesses(behind_proxy, alice):
    attacker = Client()
    for index in range(behind_proxy.AXES_FAILURE_LIMIT):
        login(attacker, "alice", "guess", ATTACKER, forged=f"192.0.2.{index}")
    response = login(attacker, "alice", PASSWORD, ATTACKER, forged="192.0.2.99")
    assert response.status_code == 429


@pytest.mark.parametrize(
    ("proxies", "meta", "expected"),
    [
        (0, {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}, "10.0.0.2"),
        (1, {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.9"}, "203.0.113.9"),
        (
            2,
            {"REMOTE_ADDR": "10.0.0.3", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.9, 10.0.0.2"},
            "203.0.113.9",
        ),
        (2, {"REMOTE_ADDR": "10.0.0.3", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}, "10.0.0.3"),
        (1, {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "not-an-address"}, "10.0.0.2"),
        (1, {"REMOTE_ADDR": "10.0.0.2"}, "10.0.0.2"),
    ],
)
def test_client_address_is_the_entry_our_outermost_proxy_added(settings, proxies, meta, expected):
    settings.TRUSTED_PROXIES = proxies
    assert ratelimit.client_ip(RequestFactory().get("/", **meta)) == expected


def test_the_pause_reads_as_minutes_says_when_to_retry_and_grows_with_each_wrong_password(
    behind_proxy, alice
):
    behind_proxy.LOGIN_PAUSE = 15 * 60
    behind_proxy.LOGIN_PAUSE_MAX = 60 * 60
    attacker = Client()
    for _ in range(behind_proxy.AXES_FAILURE_LIMIT - 1):
        assert login(attacker, "alice", "guess", ATTACKER).status_code == 200
    response = login(attacker, "alice", "guess", ATTACKER)
    assert response.status_code == 429
    assert response["Retry-After"] == "900"
    assert "15 dakika" in text(response) and "PT15M" not in text(response)

    # Tries during the pause are refused and do not make it longer.
    response = login(attacker, "alice", PASSWORD, ATTACKER)
    assert response.status_code == 429 and 850 < int(response["Retry-After"]) <= 900
    # Once it is over, the next wrong password pauses twice as long...
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=901))
    response = login(attacker, "alice", "guess", ATTACKER)
    assert response.status_code == 429 and response["Retry-After"] == "1800"
    assert "30 dakika" in text(response)
    # ...and the right one, after the pause, lets her in.
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=1801))
    assert login(attacker, "alice", PASSWORD, ATTACKER).status_code == 302


def test_the_pause_page_speaks_english_after_switching(behind_proxy, alice):
    attacker = Client()
    attacker.post(reverse("set_language"), {"language": "en", "next": "/"})
    for _ in range(behind_proxy.AXES_FAILURE_LIMIT):
        response = login(attacker, "alice", "guess", ATTACKER)
    assert "1 minute" in text(response) and "PT1M" not in text(response)


def test_password_spraying_from_one_address_is_refused_for_every_username(behind_proxy, make_user):
    behind_proxy.LOGIN_FAILURE_LIMIT_PER_IP = 3
    for name in ("u1", "u2", "u3", "bob"):
        make_user(name)
    sprayer = Client()
    for name in ("u1", "u2", "u3"):
        assert login(sprayer, name, "Yaz2026!", ATTACKER).status_code == 200  # one try each: no pair pause

    response = login(sprayer, "bob", PASSWORD, ATTACKER)
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 3600
    assert "Ağınızdan çok fazla başarısız giriş denemesi yapıldı." in text(response)
    assert re.search(r"\d+ dakika sonra yeniden deneyin", text(response))
    # Another address is not affected.
    assert login(Client(), "bob", PASSWORD, CLASSMATE).status_code == 302


# --- 2. Sign-up, enrolment codes, answers and submissions: per address and site-wide


def signup(client: Client, username: str, address: str, **data):
    fields = {
        "username": username,
        "password1": "çok-Gizli-parola-42",
        "password2": "çok-Gizli-parola-42",
        **data,
    }
    return client.post(reverse("signup"), fields, REMOTE_ADDR=address)


def test_signups_from_one_address_are_limited_with_retry_after_and_the_form_kept(settings):
    settings.SIGNUP_LIMIT_PER_IP = 2
    for index in range(2):
        assert signup(Client(), f"ogrenci{index}", ATTACKER).status_code == 302

    response = signup(Client(), "ogrenci2", ATTACKER)
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 3600
    page = text(response)
    assert "Son bir saatte ağınızdan çok fazla hesap oluşturuldu." in page
    assert "sonra yeniden deneyin" in page
    assert 'value="ogrenci2"' in page  # what was typed is still in the form
    assert not User.objects.filter(username="ogrenci2").exists()
    # Another address signs up.
    assert signup(Client(), "ogrenci3", CLASSMATE).status_code == 302


def test_signups_on_the_whole_site_are_limited_and_one_address_cannot_use_up_the_rest(settings):
    settings.SIGNUP_LIMIT_PER_IP = 1
    settings.SIGNUP_LIMIT_GLOBAL = 3
    assert signup(Client(), "a0", ATTACKER).status_code == 302
    for index in range(5):  # refused for their address: the site's allowance is untouched
        assert signup(Client(), f"a{index + 1}", ATTACKER).status_code == 429
    assert signup(Client(), "b0", "198.51.100.1").status_code == 302
    assert signup(Client(), "b1", "198.51.100.2").status_code == 302

    response = signup(Client(), "b2", "198.51.100.3")
    assert response.status_code == 429 and "Retry-After" in response
    assert "Şu anda sitede çok fazla hesap oluşturuluyor." in text(response)


def test_a_classroom_of_200_behind_one_address_is_never_refused_with_the_default_limits(settings):
    request = RequestFactory().post("/", REMOTE_ADDR=ATTACKER)
    # One window of a busy lesson for 200 students sharing the school's address.
    for limit, requests in [
        (ratelimit.SIGNUPS, 200),
        (ratelimit.WRONG_ENROLMENT_CODES, 60),
        (ratelimit.SUBMISSIONS, 200 * 3),
        (ratelimit.ANSWERS, 200 * 6),
        (ratelimit.LOGIN_FAILURES, 200 * 2),
    ]:
        for _ in range(requests):
            limit.check(request)


@pytest.mark.queue
@pytest.mark.django_db(transaction=True)
def test_requests_at_the_same_moment_are_each_counted_once(settings):
    """Many web threads at once: exactly the limit gets through, none is lost or counted twice."""
    import threading

    from django.db import connection

    settings.ANSWER_LIMIT_PER_IP = 50
    passed, start = [], threading.Barrier(8)

    def burst():
        start.wait()
        try:
            for _ in range(10):
                try:
                    ratelimit.ANSWERS.check(RequestFactory().post("/", REMOTE_ADDR=ATTACKER))
                    passed.append(1)
                except ratelimit.RateLimited:
                    pass
        finally:
            connection.close()

    threads = [threading.Thread(target=burst) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(passed) == 50


@pytest.fixture
def code_course(mini_course):
    Course.objects.filter(pk=mini_course.pk).update(enrollment="code", enrollment_code="ÇAY-2026")
    return mini_course


def test_guessing_enrolment_codes_from_one_address_is_refused(settings, code_course, make_user):
    settings.ENROL_CODE_LIMIT_PER_IP = 3
    guesser = Client()
    guesser.force_login(make_user("guesser"))
    url = reverse("enroll", args=["mini"])
    for guess in ("ÇAY-2024", "ÇAY-2025", "CAY-2026"):
        assert guesser.post(url, {"code": guess}, REMOTE_ADDR=ATTACKER).status_code == 302

    response = guesser.post(url, {"code": "ÇAY-2026"}, REMOTE_ADDR=ATTACKER)
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 3600
    assert "Ağınızdan çok fazla yanlış kayıt kodu denendi." in text(response)
    assert not code_course.is_enrolled(User.objects.get(username="guesser"))

    student = make_user("student")
    other = Client()
    other.force_login(student)
    other.post(url, {"code": "ÇAY-2026"}, REMOTE_ADDR=CLASSMATE)
    assert code_course.is_enrolled(student)


def test_right_codes_do_not_count_towards_the_limit(settings, code_course, make_user):
    settings.ENROL_CODE_LIMIT_PER_IP = 1
    for index in range(3):
        user = make_user(f"s{index}")
        client = Client()
        client.force_login(user)
        client.post(reverse("enroll", args=["mini"]), {"code": "ÇAY-2026"}, REMOTE_ADDR=ATTACKER)
        assert code_course.is_enrolled(user)


def test_answers_from_one_address_are_limited_with_a_page_and_retry_after(settings, quiz, make_user):
    settings.ANSWER_LIMIT_PER_IP = 2
    url = reverse("answer_question", args=["quiz", "selftest", "who-attends"])
    for index in range(3):
        user = make_user(f"s{index}")
        quiz.enroll(user)
        client = Client()
        client.force_login(user)
        response = client.post(url, {"option": "qv"}, REMOTE_ADDR=ATTACKER)
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60
    assert "Şu anda ağınızdan çok fazla cevap gönderiliyor." in text(response)
    assert re.search(r"\d+ (saniye|dakika) sonra yeniden deneyin", text(response))
    assert Attempt.objects.count() == 2

    settings.ANSWER_LIMIT_PER_IP = 0
    settings.ANSWER_LIMIT_GLOBAL = 2
    response = client.post(url, {"option": "qv"}, REMOTE_ADDR=CLASSMATE, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 429 and "Retry-After" in response
    # The page's script gets the question back, the message in it.
    assert 'id="q-who-attends"' in text(response)
    assert 'role="alert">Şu anda sitede çok fazla cevap gönderiliyor.' in text(response)


SOLUTION = (Path(__file__).parent / "fixtures" / "lab" / "01-lab" / "attn" / "solution.py").read_text()


@pytest.mark.sandbox
def test_code_submissions_from_one_address_are_limited_for_the_page_and_its_script(settings, lab, make_user):
    settings.SUBMISSION_LIMIT_PER_IP = 2
    url = reverse("submit_code", args=["lab", "lab", "attn"])
    clients = []
    for index in range(3):
        user = make_user(f"s{index}")
        lab.enroll(user)
        client = Client()
        client.force_login(user)
        clients.append(client)
    for client in clients[:2]:
        assert (
            client.post(
                url,
                {"code": SOLUTION, "mode": "submit"},
                REMOTE_ADDR=ATTACKER,
                HTTP_X_REQUESTED_WITH="dikkat",
            ).status_code
            == 202
        )

    response = clients[2].post(
        url, {"code": SOLUTION, "mode": "submit"}, REMOTE_ADDR=ATTACKER, HTTP_X_REQUESTED_WITH="dikkat"
    )
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60
    assert response.json()["retry_after"] == int(response["Retry-After"])
    assert response.json()["error"].startswith("Şu anda ağınızdan çok fazla kod gönderiliyor.")
    response = clients[2].post(url, {"code": SOLUTION, "mode": "submit"}, REMOTE_ADDR=ATTACKER)
    assert response.status_code == 429 and "Retry-After" in response
    assert "Lütfen biraz bekleyin" in text(response)
    assert Submission.objects.count() == 2
    # A classmate elsewhere is not held up.
    assert (
        clients[2]
        .post(
            url, {"code": SOLUTION, "mode": "submit"}, REMOTE_ADDR=CLASSMATE, HTTP_X_REQUESTED_WITH="dikkat"
        )
        .status_code
        == 202
    )


# --- 3. `next` on sign-up: a path on this site or nothing


@pytest.mark.parametrize(
    "junk", ["foo", "//evil.com", "https://evil.com/", "javascript:alert(1)", "/\\evil.com", "http:/evil"]
)
def test_signup_with_a_junk_next_lands_on_the_home_page(client, junk):
    assert client.get(reverse("signup"), {"next": junk}).status_code == 200
    response = signup(client, "ayse", "127.0.0.1", next=junk)
    assert response.status_code == 302
    assert response.url == reverse("home")


def test_signup_with_a_next_page_on_this_site_goes_there(client):
    response = signup(client, "ayse", "127.0.0.1", next="/kurs/mini/")
    assert response.status_code == 302 and response.url == "/kurs/mini/"
