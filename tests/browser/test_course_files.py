"""An instructor downloads the course's files and uploads a new version, in a real browser:
the zip holds exactly the course folder, a broken file is named with its line, a good zip is
imported by the queue, and the pages have no serious accessibility violation."""

import io
import zipfile
from pathlib import Path

import pytest

from tests.browser.test_accessibility import AXE, serious_violations

pytestmark = [pytest.mark.browser]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PASSWORD = "Dosyalar-2026"


def _zip_of(folder: Path, replace: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                name = path.relative_to(folder).as_posix()
                archive.writestr(f"mini/{name}", (replace or {}).get(name, path.read_bytes()))
    return buffer.getvalue()


@pytest.fixture
def teacher(transactional_db, make_user, mini_course):
    user = make_user("hoca", password=PASSWORD)
    mini_course.instructors.add(user)
    return user


@pytest.mark.console_allows(r"status of 400")  # the refused upload answers 400, as a form error should
def test_an_instructor_downloads_the_files_and_uploads_a_new_version(page, teacher, tmp_path, run_queue):
    from courses.exporter import export_course
    from courses.models import Course

    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill("hoca")
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.goto(page.base_url + "/egitmen/mini/")
    page.get_by_role("link", name="Kurs dosyaları").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Kurs dosyaları"

    with page.expect_download() as download:
        page.get_by_role("link", name="Zip olarak indir").click()
    assert download.value.suggested_filename == "mini.zip"
    with zipfile.ZipFile(download.value.path()) as archive:
        got = {name.removeprefix("mini/"): archive.read(name) for name in archive.namelist()}
    assert got == export_course(Course.objects.get(slug="mini"))

    broken = tmp_path / "broken.zip"
    broken.write_bytes(_zip_of(FIXTURES / "mini", {"02-second/lesson.md": b"no front matter\n"}))
    page.get_by_label("Zip olarak kurs klasörü").set_input_files(broken)
    page.get_by_role("button", name="Denetle ve içe aktar").click()
    page.wait_for_load_state()
    assert "mini/02-second/lesson.md:1: lesson.md must start with TOML front matter" in page.inner_text(
        "main"
    )

    good = tmp_path / "mini.zip"
    good.write_bytes(_zip_of(FIXTURES / "mini"))
    page.get_by_label("Zip olarak kurs klasörü").set_input_files(good)
    page.get_by_role("button", name="Denetle ve içe aktar").click()
    page.wait_for_load_state()
    assert "sırada bekliyor" in page.inner_text("main")
    run_queue()
    page.reload()
    assert "mini içe aktarıldı: değişiklik yok." in page.inner_text("main")


def test_the_course_files_pages_have_no_serious_accessibility_violation(page, teacher):
    assert AXE.exists(), "axe-core is missing: run `make setup` (npm ci)"
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill("hoca")
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    found = []
    for language in ("tr", "en"):
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 844})
            for path in ("/egitmen/mini/dosyalar/", "/egitmen/kurs-yukle/"):
                assert page.goto(page.base_url + path).ok
                scroll = page.evaluate("() => document.documentElement.scrollWidth")
                assert scroll <= width, f"{path} scrolls sideways at {width} px"
                found += [f"{path} [{language}, {width}]: {v}" for v in serious_violations(page)]
    assert not found, "\n".join(found)
