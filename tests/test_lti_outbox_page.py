"""The instructor's page of grade passback (/lti/notlar/<course>/): what was sent, what waits and
what fails with the LMS's own answer, "Tekrar gönder" for one failing score or all of them;
only the course's instructors see it or send anything."""

import html

import pytest
import test_lti_launch
import test_lti_outbox
from django.test import Client
from django.urls import reverse
from test_lti_outbox import answer

from lti.models import LtiUser
from lti.outbox import ScoreOutbox

pytestmark = pytest.mark.django_db(transaction=True)

platform = test_lti_launch.platform
linked = test_lti_launch.linked
lms = test_lti_outbox.lms
first_lesson = test_lti_outbox.first_lesson
student = test_lti_outbox.student


@pytest.fixture
def teacher(lms, linked):
    """The LMS instructor who linked the course, in a browser of their own."""
    browser = Client()
    browser.force_login(LtiUser.objects.get(sub="teacher-1").user)
    return browser


@pytest.fixture
def failing(student, lms, run_queue):
    lms.gone_lineitems.add("link-7")  # the grade column was deleted in the LMS
    answer(student, "a")
    run_queue()
    return ScoreOutbox.objects.newest().get()


def page_url(course="mini"):
    return reverse("lti:outbox", args=[course])


def retry_url(course="mini"):
    return reverse("lti:outbox_retry", args=[course])


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_the_page_shows_a_failing_score_with_the_lms_answer_and_send_again_sends_it(
    teacher, failing, lms, run_queue
):
    page = text(teacher.get(page_url()))
    assert "LMS'e gönderilen puanlar" in page
    assert "başarısız" in page and "line item not found" in page and "404" in page
    assert "Tekrar gönder" in page and "Başarısız puanların hepsini tekrar gönder" in page
    assert "&#" not in page and "&quot;" not in page
    lms.gone_lineitems.clear()  # the instructor made the column again in the LMS
    response = teacher.post(retry_url(), {"row": failing.pk}, follow=True)
    assert "1 puan birazdan tekrar gönderilecek" in text(response)
    run_queue()
    page = text(teacher.get(page_url()))
    assert "gönderildi" in page and "başarısız" not in page.split("<tbody>")[1]
    assert [s["scoreGiven"] for s in lms.scores] == [1.0]


def test_send_all_failing_again(teacher, failing, lms, run_queue):
    lms.gone_lineitems.clear()
    teacher.post(retry_url())
    run_queue()
    assert ScoreOutbox.objects.newest().get().delivery == "sent"


def test_a_score_no_longer_failing_is_not_sent_again(teacher, failing, lms, run_queue):
    lms.gone_lineitems.clear()
    teacher.post(retry_url())
    run_queue()
    response = teacher.post(retry_url(), {"row": failing.pk}, follow=True)
    assert "Bu puan artık başarısız değil" in text(response)
    assert len(lms.scores) == 1


def test_the_page_in_english(teacher, failing):
    teacher.post("/i18n/setlang/", {"language": "en", "next": page_url()})  # the language switch
    page = text(teacher.get(page_url()))
    assert "Scores sent to the LMS" in page and "failing" in page and "Send again" in page


def test_students_and_other_instructors_get_a_404_and_nothing_is_sent(
    student, failing, make_user, lms, run_queue
):
    lms.gone_lineitems.clear()
    assert student.get(page_url()).status_code == 404
    assert student.post(retry_url(), {"row": failing.pk}).status_code == 404
    stranger = make_user("baska-hoca")
    from courses.models import Course

    other = Course.objects.create(slug="baska", title="Başka kurs")
    other.instructors.add(stranger)
    browser = Client()
    browser.force_login(stranger)
    assert browser.get(page_url()).status_code == 404
    assert browser.post(retry_url()).status_code == 404
    assert browser.get(page_url("baska")).status_code == 200  # their own course: empty
    run_queue()
    assert ScoreOutbox.objects.get(pk=failing.pk).delivery == "failing" and not lms.scores
    anonymous = Client()
    assert anonymous.get(page_url()).status_code == 302


def test_send_again_needs_the_csrf_token(teacher, failing):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(LtiUser.objects.get(sub="teacher-1").user)
    assert strict.post(retry_url(), {"row": failing.pk}).status_code == 403
    assert ScoreOutbox.objects.get(pk=failing.pk).delivery == "failing"


def test_the_instructor_dashboard_links_to_the_page(teacher, linked):
    page = teacher.get(reverse("instructors:dashboard", args=["mini"])).content.decode()
    assert page_url() in page
