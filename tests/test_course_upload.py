"""The course files page for instructors: a zip of exactly what the last import read, and a
zip upload that is checked in the request and imported by a worker as import_course does."""

import html
import io
import zipfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from courses.exporter import export_course
from courses.importer import import_course
from courses.models import Course

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _folder_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _zip(entries: dict[str, bytes]) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return SimpleUploadedFile("kurs.zip", buffer.getvalue(), content_type="application/zip")


def _mini_entries(top: str = "mini") -> dict[str, bytes]:
    return {f"{top}/{path}": data for path, data in _folder_bytes(FIXTURES / "mini").items()}


@pytest.mark.django_db
def test_only_the_course_instructors_and_superusers_download_its_files(client, mini_course, make_user, alice):
    url = reverse("instructors:course_zip", args=["mini"])
    assert client.get(url).status_code == 302  # to the login page
    client.force_login(alice)  # a student of nothing here
    assert client.get(url).status_code == 404
    client.force_login(make_user("baska-hoca"))
    assert client.get(reverse("instructors:course_files", args=["mini"])).status_code == 404

    teacher = make_user("hoca")
    mini_course.instructors.add(teacher)
    client.force_login(teacher)
    page = client.get(reverse("instructors:course_files", args=["mini"])).text
    assert "Kursa ait 4 dosya" in page and "Zip olarak indir" in page
    response = client.get(url)
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="mini.zip"'
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        got = {name.removeprefix("mini/"): archive.read(name) for name in archive.namelist()}
    assert got == export_course(mini_course) == _folder_bytes(FIXTURES / "mini")

    client.force_login(make_user("personel", is_staff=True))  # the admin's staff, not its teacher
    assert client.get(url).status_code == 404
    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))
    assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_the_files_page_names_rows_changed_since_the_import(client, mini_course, make_user):
    mini_course.lessons.filter(slug="second").update(title="Elle değişti")
    teacher = make_user("hoca")
    mini_course.instructors.add(teacher)
    client.force_login(teacher)
    page = client.get(reverse("instructors:course_files", args=["mini"])).text
    assert "veritabanında değiştirildi" in page and "<code>second</code>" in page


@pytest.mark.django_db(transaction=True)
def test_a_new_course_uploaded_as_a_zip_is_imported_by_a_worker_and_exports_as_it_came(
    client, make_user, run_queue, tmp_path
):
    client.force_login(make_user("personel", is_staff=True))
    response = client.post(reverse("instructors:upload"), {"archive": _zip(_mini_entries())})
    assert response.status_code == 302
    assert not Course.objects.exists()  # nothing is imported in the request
    status_url = response["Location"]
    assert "sırada bekliyor" in client.get(status_url).text

    run_queue()
    page = client.get(status_url).text
    assert "mini içe aktarıldı" in page and "+ course mini (created)" in page
    course = Course.objects.get(slug="mini")
    assert export_course(course) == _folder_bytes(FIXTURES / "mini")
    call_command("export_course", "mini", str(tmp_path))
    assert (
        import_course(tmp_path / "mini").changes == []
    )  # the round trip of a course with no folder of its own


@pytest.mark.django_db(transaction=True)
def test_an_upload_over_an_edited_course_is_refused_unless_asked_to_overwrite(
    client, mini_course, make_user, run_queue
):
    mini_course.questions.filter(slug="first-choice").update(explanation_html="<p>Elle.</p>")
    teacher = make_user("hoca")
    mini_course.instructors.add(teacher)
    client.force_login(teacher)
    status_url = client.post(reverse("instructors:upload"), {"archive": _zip(_mini_entries())})["Location"]
    run_queue()
    page = client.get(status_url).text
    assert "Hiçbir şey içe aktarılmadı" in page
    assert "question first-choice was changed in the database since the last import" in page
    assert mini_course.questions.get(slug="first-choice").explanation_html == "<p>Elle.</p>"

    forced = client.post(reverse("instructors:upload"), {"archive": _zip(_mini_entries()), "force": "on"})
    run_queue()
    assert "~ question first-choice (changed: explanation_html)" in client.get(forced["Location"]).text
    assert mini_course.questions.get(slug="first-choice").explanation_html != "<p>Elle.</p>"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"mini/../evil.py": b"x = 1\n"}, "zip içindeki her yol kurs klasörünün içinde kalmalıdır"),
        ({"/etc/mini/course.toml": b""}, "zip içindeki her yol kurs klasörünün içinde kalmalıdır"),
        ({"mini/course.toml": b"", "mini/run.sh": b"rm -rf /\n"}, "bir kurs yalnızca .toml, .md"),
        ({"course.toml": b'slug = "mini"\n'}, "tek bir kurs klasörü içermelidir"),
        ({"Mini Kurs/course.toml": b'slug = "mini"\n'}, "küçük harf ve rakamlardan oluşmalı"),
    ],
)
@pytest.mark.django_db
def test_an_unsafe_or_misshapen_zip_is_refused_with_its_reason(client, make_user, entries, message):
    client.force_login(make_user("personel", is_staff=True))
    response = client.post(reverse("instructors:upload"), {"archive": _zip(entries)})
    assert response.status_code == 400
    assert message in html.unescape(response.text)
    assert not Course.objects.exists()
    assert not any((Path(settings.VAR_DIR) / "course-uploads").glob("*/*/evil.py"))


@pytest.mark.django_db
def test_a_zip_whose_files_are_too_big_is_refused_without_reading_past_the_cap(
    client, make_user, monkeypatch
):
    import courses.uploads

    monkeypatch.setattr(courses.uploads, "MAX_FILE_BYTES", 1000)
    entries = _mini_entries() | {"mini/01-first/notes.txt": b"0" * 50_000}  # compresses to almost nothing
    client.force_login(make_user("personel", is_staff=True))
    response = client.post(reverse("instructors:upload"), {"archive": _zip(entries)})
    assert response.status_code == 400
    assert "mini/01-first/notes.txt kursu fazla büyütüyor" in response.text


@pytest.mark.django_db
def test_a_file_that_is_not_a_zip_is_refused(client, make_user):
    client.force_login(make_user("personel", is_staff=True))
    upload = SimpleUploadedFile("kurs.zip", b"not a zip at all", content_type="application/zip")
    response = client.post(reverse("instructors:upload"), {"archive": upload})
    assert "Bu dosya bir zip arşivi değil" in response.text


@pytest.mark.django_db
def test_bad_toml_in_an_upload_shows_the_validation_problem_and_imports_nothing(client, make_user):
    entries = _mini_entries() | {"mini/02-second/questions.toml": b"[[questions]\n"}
    client.force_login(make_user("personel", is_staff=True))
    response = client.post(reverse("instructors:upload"), {"archive": _zip(entries)})
    assert response.status_code == 400
    page = html.unescape(response.text)
    assert "Kurs dosyalarında 1 sorun var; hiçbir şey içe aktarılmadı" in page
    assert "mini/02-second/questions.toml:1: TOML syntax error" in page
    assert not Course.objects.exists()


@pytest.mark.django_db
def test_an_instructor_may_not_upload_another_course_and_a_student_not_at_all(
    client, mini_course, make_user, alice
):
    client.force_login(alice)
    assert client.get(reverse("instructors:upload")).status_code == 404
    teacher = make_user("hoca")
    mini_course.instructors.add(teacher)
    client.force_login(teacher)
    entries = {name.replace("mini/", "maxi/"): data for name, data in _mini_entries().items()}
    entries["maxi/course.toml"] = entries["maxi/course.toml"].replace(b'"mini"', b'"maxi"')
    response = client.post(reverse("instructors:upload"), {"archive": _zip(entries)})
    assert response.status_code == 400
    assert "maxi kursunda eğitmen değilsiniz" in response.text
    assert not Course.objects.filter(slug="maxi").exists()


@pytest.mark.django_db
def test_the_outcome_of_an_upload_is_shown_only_to_who_uploaded_it_and_staff(client, make_user, mini_course):
    teacher = make_user("hoca")
    mini_course.instructors.add(teacher)
    client.force_login(teacher)
    status_url = client.post(reverse("instructors:upload"), {"archive": _zip(_mini_entries())})["Location"]
    other = make_user("diger-hoca")
    mini_course.instructors.add(other)
    client.force_login(other)
    assert client.get(status_url).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_second_upload_becomes_the_course_folder_and_the_first_is_removed(client, make_user, run_queue):
    # Staff who upload a new course teach it: they may upload its next version.
    client.force_login(make_user("personel", is_staff=True))
    client.post(reverse("instructors:upload"), {"archive": _zip(_mini_entries())})
    run_queue()
    assert list(Course.objects.get(slug="mini").instructors.values_list("username", flat=True)) == [
        "personel"
    ]
    first = Path(Course.objects.get(slug="mini").source_path)
    assert (first / "course.toml").is_file()
    entries = _mini_entries()
    entries["mini/course.toml"] = entries["mini/course.toml"].replace(b"Mini kurs", b"Mini kurs, ikinci")
    client.post(reverse("instructors:upload"), {"archive": _zip(entries)})
    run_queue()
    course = Course.objects.get(slug="mini")
    assert course.title == "Mini kurs, ikinci"
    assert Path(course.source_path) != first and (Path(course.source_path) / "course.toml").is_file()
    assert not first.exists()


@pytest.mark.django_db
def test_staff_who_do_not_teach_a_course_may_not_upload_a_new_version_of_it(client, mini_course, make_user):
    client.force_login(make_user("personel", is_staff=True))  # staff for the admin, not its teacher
    response = client.post(reverse("instructors:upload"), {"archive": _zip(_mini_entries())})
    assert response.status_code == 400
    assert "mini kursunda eğitmen değilsiniz" in html.unescape(response.text)
