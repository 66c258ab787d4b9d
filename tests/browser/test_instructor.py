"""An instructor's gradebook and a regrade, in chromium, with a real grading worker."""

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOLUTION = (FIXTURES / "lab" / "01-lab" / "attn" / "solution.py").read_text()
NO_SCALING = (FIXTURES / "lab" / "01-lab" / "attn" / "variants" / "no_scaling.py").read_text()


def test_gradebook_sorting_csv_and_a_regrade(page, lab_live, make_user, grading_worker, tmp_path):
    from courses.exercises import check_exercises
    from courses.importer import import_course
    from grader.grading import grade_claimed, submit

    teacher = make_user("hoca", password="Hoca-parola-2026")
    lab_live.instructors.add(teacher)
    attn = lab_live.exercises.get(slug="attn")
    for name, code in (("ali", NO_SCALING), ("berna", SOLUTION)):
        student = make_user(name)
        lab_live.enroll(student)
        grade_claimed(submit(student, attn, code).submission.pk)

    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill("hoca")
    page.locator("#id_password").fill("Hoca-parola-2026")
    page.locator("main form button[type=submit]").click()
    page.get_by_role("link", name="Eğitmen").click()
    page.get_by_role("link", name="Not defteri").click()
    rows = page.locator("table.gradebook tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_role("link", name="Toplam", exact=True).click()  # ascending
    page.get_by_role("link", name="Toplam ↑").click()  # descending
    expect(rows.first.locator("th")).to_have_text("berna")
    with page.expect_download() as download:
        page.get_by_role("link", name="CSV indir").click()
    assert download.value.suggested_filename == "lab-notlar.csv"
    rows.first.get_by_role("link", name="1,00").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("berna")

    # The exercise changes: unscaled scores are now the reference.
    course_dir = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", course_dir)
    folder = course_dir / "01-lab" / "attn"
    (folder / "solution.py").write_text(NO_SCALING)
    toml = (folder / "exercise.toml").read_text()
    (folder / "exercise.toml").write_text(
        "\n".join(
            line
            for line in toml.splitlines()
            if not line.startswith(("[[misconceptions]]", "tag =", "file =", "hint ="))
        )
    )
    import_course(course_dir, prepare_exercises=lambda s: check_exercises(s, build=True))

    page.goto(page.base_url + "/egitmen/lab/oge/e/attn/")
    expect(
        page.get_by_text("2 gönderim bu alıştırmanın eski bir sürümüne göre notlandırıldı.")
    ).to_be_visible()
    page.get_by_role("button", name="Bütün gönderimlerin yeniden notlandırılmasını önizle").click()
    expect(page.get_by_text("↑ 1")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("↓ 1")).to_be_visible()
    page.get_by_role("button", name="Bu notları uygula").click()
    expect(page.get_by_text("2 not güncellendi")).to_be_visible()
    page.goto(page.base_url + "/egitmen/lab/notlar/?sort=total&desc=1")
    expect(page.locator("table.gradebook tbody tr").first.locator("th")).to_have_text("ali")
