"""A new student's first visit, in a real chromium: sign up, enrol, read, move, switch language."""

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]


@pytest.fixture
def course(transactional_db, mini_course_dir):
    from courses.importer import import_course

    import_course(mini_course_dir)


def test_new_student_signs_up_enrols_reads_and_moves_between_lessons(page, course):
    page.goto(page.base_url + "/")
    page.get_by_role("link", name="Hesap oluştur").first.click()
    page.get_by_label("Kullanıcı adı").fill("zeynep")
    page.get_by_label("Parola:", exact=True).fill("çay-Demlendi-2026")
    page.get_by_label("Parola onayı:").fill("çay-Demlendi-2026")
    page.get_by_role("button", name="Hesap oluştur").click()
    expect(page.get_by_text("Hoş geldiniz, zeynep!")).to_be_visible()

    page.get_by_role("link", name="Mini kurs").click()
    page.get_by_role("button", name="Bu kursa katıl").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Birinci ders")
    # Formulas arrive as MathML, readable without any script.
    math = page.locator("article.lesson math")
    expect(math.first).to_be_visible()
    assert page.locator("article.lesson mfrac").count() >= 1

    page.get_by_role("link", name="Sonraki: İkinci ders →").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("İkinci ders")
    page.get_by_role("link", name="← Önceki: Birinci ders").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Birinci ders")

    page.get_by_label("Dil").select_option("en")
    page.get_by_role("button", name="Dili değiştir").click()
    expect(page.get_by_role("link", name="My progress")).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.get_by_role("link", name="My progress").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("My progress")
    expect(page.get_by_role("main")).to_contain_text("0 of 2 lessons marked done")
    expect(page.locator(".progress-next")).to_contain_text("Continue where you left off:")
    expect(page.locator(".progress-next").get_by_role("link", name="Birinci ders")).to_be_visible()


@pytest.mark.nojs
def test_lesson_pages_work_without_javascript(page, course, make_user):
    make_user("deniz", password="Parola-2026-uzun")
    page.goto(page.base_url + "/accounts/login/?next=/kurs/mini/")
    page.get_by_label("Kullanıcı adı").fill("deniz")
    page.get_by_label("Parola").fill("Parola-2026-uzun")
    page.get_by_role("button", name="Giriş yap").click()
    page.get_by_role("button", name="Bu kursa katıl").click()
    expect(page.locator("article.lesson mfrac").first).to_be_attached()
    page.get_by_role("button", name="Tamamlandı olarak işaretle ve devam et").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("İkinci ders")
