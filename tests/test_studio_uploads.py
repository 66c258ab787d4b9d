"""Uploads and publishes import a course through one helper (courses.uploads.import_folder)
under the course's lock: a zip that would write a file where a folder goes is refused with
nothing written, two imports of one course at once never remove the folder the course reads,
and an import that raises leaves no unpacked folder behind."""

import html
import io
import threading
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from courses import uploads
from courses.models import Course
from courses.reimport import run_reimport

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _mini_files() -> dict[str, bytes]:
    root = FIXTURES / "mini"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _upload_folders() -> set[Path]:
    return {p for p in (Path(settings.VAR_DIR) / "course-uploads").glob("*/*") if p.is_dir()}


def _zip(entries: dict[str, bytes]) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return SimpleUploadedFile("kurs.zip", buffer.getvalue(), content_type="application/zip")


@pytest.mark.django_db
def test_a_zip_with_a_file_and_a_folder_of_the_same_name_is_refused_and_nothing_is_written(client, make_user):
    before = _upload_folders()
    entries = {f"mini/{path}": data for path, data in _mini_files().items()}
    entries["mini/01-first/notes.md"] = b"# a file\n"
    entries["mini/01-first/notes.md/inside.md"] = b"# and a folder\n"
    client.force_login(make_user("personel", is_staff=True))

    response = client.post(reverse("instructors:upload"), {"archive": _zip(entries)})

    assert response.status_code == 400
    page = html.unescape(response.text)
    assert "mini/01-first/notes.md zip içinde bir dosya" in page
    assert "mini/01-first/notes.md/inside.md" in page
    assert _upload_folders() == before
    assert not Course.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_uploads_of_one_course_at_once_leave_exactly_the_folder_the_course_reads():
    before = _upload_folders()
    first = uploads.import_upload.call(str(uploads.unpack("mini", _mini_files())), False, None)
    assert first["imported"]
    files = _mini_files()
    versions = []
    for title in ("ikinci", "üçüncü"):
        files["course.toml"] = _mini_files()["course.toml"].replace(b"Mini kurs", f"Mini {title}".encode())
        versions.append(uploads.unpack("mini", dict(files)))
    start, outcomes = threading.Barrier(2), []

    def upload(root: Path) -> None:
        start.wait()
        try:
            outcomes.append(uploads.import_upload.call(str(root), False, None))
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(root,)) for root in versions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [o["imported"] for o in outcomes] == [True, True]
    course = Course.objects.get(slug="mini")
    live = Path(course.source_path)
    assert (live / "course.toml").is_file() and course.title in ("Mini ikinci", "Mini üçüncü")
    assert _upload_folders() - before == {live}  # the earlier ones are gone, the live one is not


@pytest.mark.django_db(transaction=True)
def test_an_import_refused_again_for_the_folder_the_course_reads_keeps_that_folder():
    root = uploads.unpack("mini", _mini_files())
    assert uploads.import_upload.call(str(root), False, None)["imported"]
    Course.objects.get(slug="mini").lessons.filter(slug="second").update(title="Elle değişti")

    # The same task run a second time (a worker presumed lost): refused by the admin-edit guard.
    outcome = uploads.import_upload.call(str(root), False, None)

    assert not outcome["imported"]
    assert (root / "course.toml").is_file() and Course.objects.get().source_path == str(root)
    assert run_reimport(Course.objects.get().pk)["imported"] is False  # re-import reads it still
    assert (root / "course.toml").is_file()


@pytest.mark.django_db(transaction=True)
def test_an_upload_whose_import_raises_leaves_no_folder_behind(monkeypatch):
    root = uploads.unpack("mini", _mini_files())

    def broken(*args, **kwargs):
        raise RuntimeError("the worker's disk failed")

    monkeypatch.setattr(uploads, "import_course", broken)
    with pytest.raises(RuntimeError):
        uploads.import_upload.call(str(root), False, None)
    assert not root.exists() and not root.parent.exists()
    assert not Course.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_admin_reimport_and_an_upload_import_through_the_same_helper(monkeypatch):
    root = uploads.unpack("mini", _mini_files())
    uploads.import_upload.call(str(root), False, None)
    seen = []
    real = uploads.import_folder

    def spy(folder, **kwargs):
        seen.append(Path(folder))
        return real(folder, **kwargs)

    monkeypatch.setattr("courses.reimport.import_folder", spy)
    assert run_reimport(Course.objects.get().pk) == {"imported": True, "changes": []}
    assert seen == [root] and (root / "course.toml").is_file()
