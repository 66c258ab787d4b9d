"""The course's LMS links page (/lti/baglantilar/<course>/): an LMS course's request to open a
Dikkat course waits there for one of the course's instructors (or staff). Nobody else learns
that the page exists; approving links the LMS course and makes its asking instructor an
instructor here, declining leaves it unlinked, and a request answered meanwhile is no longer
open to a second click."""

import html

import pytest
import test_lti_launch
from django.test import Client
from lti_platform import INSTRUCTOR, Launch
from test_lti_launch import run_launch

from courses.models import Course
from lti.models import InstructorGrant, LtiContext, LtiUser, Platform

platform = test_lti_launch.platform
PAGE = "/lti/baglantilar/mini/"


@pytest.fixture
def request_waits(platform, mini_course, client):
    """teacher-1 (Ayşe Hoca in the LMS) asks for the mini course at the first launch."""
    Platform.objects.update(course=mini_course)
    run_launch(
        client,
        platform,
        Launch(sub="teacher-1", roles=[INSTRUCTOR], name="Ayşe Hoca", email="ayse@lms.example"),
    )
    assert client.post("/lti/kurs-sec/", {"course": "mini"}).status_code == 302
    context = LtiContext.objects.get()
    assert context.awaits_approval
    return context


def browser_of(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def test_only_the_courses_instructors_and_superusers_see_the_page(request_waits, mini_course, make_user):
    hoca = make_user("hoca")
    mini_course.instructors.add(hoca)
    page = text_of(browser_of(hoca).get(PAGE))
    assert "“Mini kurs” kursunun LMS kursları" in page
    assert "Dikkat 101 (LMS)" in page and "Ayşe Hoca" in page and "ayse@lms.example" in page
    assert browser_of(make_user("admin", is_staff=True, is_superuser=True)).get(PAGE).status_code == 200

    student = make_user("ogrenci")
    mini_course.enroll(student)
    other = make_user("other-teacher")
    Course.objects.create(slug="other", title="Başka kurs").instructors.add(other)
    asker = LtiUser.objects.get(sub="teacher-1").user  # not an instructor of the course (yet)
    staff = make_user("personel", is_staff=True)  # staff status is for the admin only
    for user in (student, other, asker, staff):
        browser = browser_of(user)
        assert browser.get(PAGE).status_code == 404
        answer = browser.post(PAGE, {"context": request_waits.pk, "action": "approve"})
        assert answer.status_code == 404
    assert Client().get(PAGE).status_code == 302  # anonymous: to the login page
    assert Client().post(PAGE, {"context": request_waits.pk, "action": "approve"}).status_code == 302
    request_waits.refresh_from_db()
    assert request_waits.course is None and not mini_course.is_instructor(asker)


def test_an_instructor_approves_and_a_second_click_says_the_request_is_no_longer_open(
    request_waits, mini_course, make_user
):
    hoca = make_user("hoca")
    mini_course.instructors.add(hoca)
    browser = browser_of(hoca)
    response = browser.post(PAGE, {"context": request_waits.pk, "action": "approve"}, follow=True)
    assert "“Dikkat 101 (LMS)” artık “Mini kurs” kursunu açıyor" in text_of(response)
    request_waits.refresh_from_db()
    assert (request_waits.course, request_waits.approved_by) == (mini_course, hoca)
    asker = LtiUser.objects.get(sub="teacher-1").user
    assert mini_course.is_instructor(asker)
    assert InstructorGrant.objects.filter(user=asker, context=request_waits, revoked_at=None).exists()
    assert "“Dikkat 101 (LMS)” üyeleri" in text_of(response)  # now under "Linked"

    # A stale tab: the same request approved (or declined) again.
    for action in ("approve", "decline"):
        again = browser.post(PAGE, {"context": request_waits.pk, "action": action}, follow=True)
        assert "Bu istek artık açık değil." in text_of(again)
    request_waits.refresh_from_db()
    assert request_waits.course == mini_course


def test_declining_leaves_the_lms_course_unlinked_and_its_instructor_may_ask_again(
    request_waits, mini_course, make_user, client
):
    hoca = make_user("hoca")
    mini_course.instructors.add(hoca)
    browser = browser_of(hoca)
    response = browser.post(PAGE, {"context": request_waits.pk, "action": "decline"}, follow=True)
    assert "“Dikkat 101 (LMS)” isteği reddedildi." in text_of(response)
    assert "Bağlanmak isteyen bir LMS kursu yok." in text_of(response)
    request_waits.refresh_from_db()
    assert request_waits.course is None and request_waits.requested_course is None
    assert not mini_course.is_instructor(LtiUser.objects.get(sub="teacher-1").user)
    late = browser.post(PAGE, {"context": request_waits.pk, "action": "approve"}, follow=True)
    assert "Bu istek artık açık değil." in text_of(late)
    request_waits.refresh_from_db()
    assert request_waits.course is None  # a declined request cannot be approved afterwards
    # The LMS instructor asks again (their session still holds the choice).
    assert client.post("/lti/kurs-sec/", {"course": "mini"}).status_code == 302
    request_waits.refresh_from_db()
    assert request_waits.awaits_approval


def test_a_request_for_another_course_cannot_be_answered_from_this_courses_page(
    request_waits, mini_course, make_user
):
    other = Course.objects.create(slug="other", title="Başka kurs")
    hoca = make_user("hoca")
    other.instructors.add(hoca)  # teaches the other course, posts to its page
    response = browser_of(hoca).post(
        "/lti/baglantilar/other/", {"context": request_waits.pk, "action": "approve"}, follow=True
    )
    assert "Bu istek artık açık değil." in text_of(response)
    request_waits.refresh_from_db()
    assert request_waits.course is None and request_waits.requested_course == mini_course


def test_an_instructor_unlinks_an_approved_lms_course_and_its_rights_and_entry_end(
    request_waits, mini_course, make_user, platform
):
    hoca = make_user("hoca")
    mini_course.instructors.add(hoca)
    browser = browser_of(hoca)
    browser.post(PAGE, {"context": request_waits.pk, "action": "approve"})
    asker = LtiUser.objects.get(sub="teacher-1").user
    assert mini_course.is_instructor(asker)

    # Someone else posting the form changes nothing.
    stranger = browser_of(make_user("stranger"))
    assert stranger.post(PAGE, {"context": request_waits.pk, "action": "unlink"}).status_code == 404
    response = browser.post(PAGE, {"context": request_waits.pk, "action": "unlink"}, follow=True)
    assert "“Dikkat 101 (LMS)” artık “Mini kurs” kursunu açmıyor" in text_of(response)
    assert "Bu kursu henüz hiçbir LMS kursu açmıyor." in text_of(response)
    request_waits.refresh_from_db()
    assert request_waits.course is None and not request_waits.awaits_approval
    assert not mini_course.is_instructor(asker)  # the rights the link gave are taken back
    assert mini_course.is_instructor(hoca)  # rights given in Dikkat stay
    assert InstructorGrant.objects.get(user=asker, context=request_waits).revoked_at is not None
    again = browser.post(PAGE, {"context": request_waits.pk, "action": "unlink"}, follow=True)
    assert "Bu LMS kursu artık bağlı değil." in text_of(again)

    # A student of the LMS course can no longer enter through it.
    from lti_platform import LEARNER

    refused = run_launch(Client(), platform, Launch(sub="student-1", roles=[LEARNER]))
    assert refused.status_code == 403


def test_rights_another_lms_course_gave_do_not_unlink_this_one(
    request_waits, mini_course, make_user, platform
):
    staff = browser_of(make_user("admin", is_staff=True, is_superuser=True))
    staff.post(PAGE, {"context": request_waits.pk, "action": "approve"})
    asker = LtiUser.objects.get(sub="teacher-1").user  # teaches the course through section A's link
    section_b = LtiContext.objects.create(
        platform=Platform.objects.get(), context_id="section-b", title="Şube B", course=mini_course
    )
    teacher = browser_of(asker)
    assert "Şube B" in text_of(teacher.get(PAGE))
    teacher.post(PAGE, {"context": section_b.pk, "action": "unlink"})
    section_b.refresh_from_db()
    assert section_b.course == mini_course  # still linked
    # Their own LMS course they may unlink.
    teacher.post(PAGE, {"context": request_waits.pk, "action": "unlink"})
    request_waits.refresh_from_db()
    assert request_waits.course is None
