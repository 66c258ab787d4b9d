""" "Bu öğeyi dene" follows its check by itself, as a student's answer status does."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]


def test_the_check_page_updates_itself_when_the_check_is_done(page, lab_live, make_user):
    from grader.models import ItemCheck

    teacher = make_user("hoca", password="Hoca-parola-2026")
    lab_live.instructors.add(teacher)
    attn = lab_live.exercises.get(slug="attn")
    check = ItemCheck.objects.create(exercise=attn, requested_by=teacher)  # queued, no worker here
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill("hoca")
    page.locator("#id_password").fill("Hoca-parola-2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.goto(page.base_url + "/egitmen/lab/alistirma/attn/dene/")
    expect(
        page.get_by_text("Sırası bekleniyor: öğrencilerin gönderimleri önce notlandırılır…")
    ).to_be_visible()
    expect(page.get_by_text("Bu sayfa kendiliğinden güncellenir.")).to_be_visible()
    assert "işçi" not in page.locator("main").inner_text()
    url = page.url

    # What a grading worker does when it finishes: the page shows it without a reload.
    ItemCheck.objects.filter(pk=check.pk).update(
        status=ItemCheck.Status.DONE,
        started_at=timezone.now(),
        finished_at=timezone.now(),
        runs=[
            {
                "label": "",
                "file": "",
                "verdict": "passed",
                "score": 1.0,
                "misconception": "",
                "hidden_failed": [],
            }
        ],
    )
    expect(page.get_by_role("cell", name="geçti")).to_be_visible(timeout=15_000)
    expect(page.get_by_text("Bu sayfa kendiliğinden güncellenir.")).to_have_count(0)
    expect(page.get_by_role("button", name="Denetimi çalıştır")).to_be_enabled()
    assert page.url == url
