"""Running and submitting code in chromium, with live status from a real grading worker."""

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

LESSON = "/kurs/lab/lab/"
SOLUTION = """import numpy as np


def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""


def test_run_then_submit_shows_live_status_and_verdict(page, lab_live, grading_worker, logged_in, write_code):
    logged_in(lab_live)
    page.goto(page.base_url + LESSON)
    exercise = page.locator("#ex-attn")
    write_code(exercise, SOLUTION.replace("/ np.sqrt(Q.shape[-1])", ""))
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    result = exercise.locator("[data-result]")
    expect(result).to_contain_text("Bazı durumlar geçmedi", timeout=30_000)
    expect(result).to_contain_text("Ölçeklemeyi unutma.")  # the catalog's hint
    write_code(exercise, SOLUTION)
    exercise.get_by_role("button", name="Örneklerde çalıştır").click()
    expect(result).to_contain_text("Bütün örnekler geçti", timeout=30_000)
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    expect(result).to_contain_text("Bütün durumlar geçti", timeout=30_000)
    page.reload()
    expect(page.locator("#ex-attn [data-result]")).to_contain_text("Bütün durumlar geçti")
    # after_attempts = 2 has been reached: the sample solution may be shown.
    page.locator("#ex-attn").get_by_role("button", name="Örnek çözümü göster").click()
    expect(page.locator("#ex-attn .sample-solution pre")).to_contain_text("def attention")


@pytest.mark.nojs
def test_submit_without_javascript_shows_the_same_state_after_reload(
    page, lab_live, grading_worker, logged_in
):
    logged_in(lab_live)
    page.goto(page.base_url + LESSON)
    page.locator("#ex-attn").get_by_label("Kodunuz (NumPy ile Python)").fill(SOLUTION)
    page.locator("#ex-attn").get_by_role("button", name="Notlandırmaya gönder").click()
    # Without scripts the student follows the "Yenile" link until the verdict is in.
    result = page.locator("#ex-attn [data-result]")
    for _ in range(60):
        if "Bütün durumlar geçti" in result.inner_text():
            break
        page.wait_for_timeout(500)
        result.get_by_role("link", name="Yenile").click()
    expect(result).to_contain_text("Bütün durumlar geçti")
