"""The instructors' page of grade passback in chromium: a score the LMS refused shows with the
LMS's answer, "Tekrar gönder" sends it again once the LMS is fixed. On a phone each score is a
card of labelled lines: its state and the "send again" button are on the screen without scrolling
sideways; at 1280 px the scores are a table with its header row. No serious accessibility
violation, in Turkish and in English."""

import pytest
import test_lti_launch
import test_lti_outbox
from playwright.sync_api import expect
from test_lti_outbox import answer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

platform = test_lti_launch.platform
linked = test_lti_launch.linked
lms = test_lti_outbox.lms
first_lesson = test_lti_outbox.first_lesson
student = test_lti_outbox.student


def test_an_instructor_sends_a_refused_score_again_from_the_page(page, student, lms, run_queue, make_user):
    from lti.outbox import ScoreOutbox
    from tests.browser.test_lti_pages_phone import (
        PASSWORD,
        PHONE,
        assert_on_screen,
        each_view,
        header_row_is_a_row,
        label_before,
        log_in,
    )

    lms.gone_lineitems.add("link-7")  # the grade column was deleted in the LMS
    answer(student, "a")
    run_queue()
    assert ScoreOutbox.objects.newest().get().delivery == "failing"
    from courses.models import Course

    Course.objects.get(slug="mini").instructors.add(make_user("hoca", password=PASSWORD))
    log_in(page, "hoca")

    words = {
        "tr": ("LMS'e gönderilen puanlar", "başarısız", "Tekrar gönder:", "Durum"),
        "en": ("Scores sent to the LMS", "failing", "Send again:", "State"),
    }
    headings = {language: heading for language, (heading, *_rest) in words.items()}
    for language, width in each_view(page, "/lti/notlar/mini/", headings, "lti-outbox", exact=False):
        _heading, failing, send_again, state = words[language]
        score = page.get_by_role("table").locator("tbody tr").first
        status = score.get_by_role("cell").filter(has=page.get_by_text(failing, exact=True))
        assert_on_screen(status.get_by_text(failing, exact=True), width)
        assert_on_screen(score.get_by_role("button", name=send_again), width)
        if width == PHONE:  # a card: the column's name before what it names, no header row
            assert not header_row_is_a_row(page)
            assert label_before(status) == f'"{state}"'
        else:
            assert header_row_is_a_row(page)
            assert label_before(status) == "none"

    page.context.add_cookies([{"name": "django_language", "value": "tr", "url": page.base_url}])
    page.goto(page.base_url + "/lti/notlar/mini/")
    table = page.get_by_role("table")
    expect(table).to_contain_text("başarısız")
    expect(table).to_contain_text("404")  # the LMS's own answer
    lms.gone_lineitems.clear()  # the instructor made the column again in the LMS
    page.get_by_role("button", name="Tekrar gönder:").first.click()
    expect(page.get_by_text("1 puan birazdan tekrar gönderilecek")).to_be_visible()
    run_queue()
    page.reload()
    expect(page.get_by_role("table")).to_contain_text("gönderildi")
    assert [s["scoreGiven"] for s in lms.scores] == [1.0]
