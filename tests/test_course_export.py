"""A course's files stay the source of truth: an export gives back exactly the folder that
was imported, importing it again changes nothing, and an import never overwrites what was
edited in the database since the last one unless forced."""

import hashlib
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from courses.exporter import export_course, read_folder, zip_bytes
from courses.importer import ImportRefused, import_course
from courses.models import Course, SourceFile

BUILT_IN = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _folder_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.mark.django_db
def test_built_in_course_exports_byte_for_byte_and_imports_back_as_no_change(tmp_path, capsys):
    import_course(BUILT_IN)
    course = Course.objects.get(slug="attention")

    call_command("export_course", "attention", str(tmp_path))
    exported = tmp_path / "attention"
    assert f"{len(_folder_bytes(BUILT_IN))} file(s) written to" in capsys.readouterr().out
    assert _folder_bytes(exported) == _folder_bytes(BUILT_IN)  # every file, and no other

    again = import_course(exported)
    assert again.changes == []
    assert export_course(course) == _folder_bytes(BUILT_IN)


@pytest.mark.django_db
def test_export_into_a_fresh_database_and_back_changes_nothing(mini_course, tmp_path):
    files = export_course(mini_course)
    assert set(files) == {
        "course.toml",
        "01-first/lesson.md",
        "01-first/questions.toml",
        "02-second/lesson.md",
    }
    course_folder = tmp_path / "export" / "mini"
    call_command("export_course", "mini", str(tmp_path / "export"))
    Course.objects.all().delete()  # a fresh database: nothing of the course is left

    first = import_course(course_folder)
    assert "+ course mini (created)" in first.changes
    assert import_course(course_folder).changes == []
    assert export_course(Course.objects.get(slug="mini")) == files


@pytest.mark.django_db
def test_stored_files_follow_the_folder_and_leave_caches_and_hidden_files_out(mini_course, mini_course_dir):
    (mini_course_dir / "02-second" / "questions.toml").write_text(
        '[[questions]]\nslug = "q2"\nkind = "numeric"\nprompt = "Kaç?"\nanswer = 2\ntolerance = 0\n',
        encoding="utf-8",
    )
    (mini_course_dir / "01-first" / "questions.toml").unlink()
    (mini_course_dir / "__pycache__").mkdir()
    (mini_course_dir / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (mini_course_dir / ".DS_Store").write_bytes(b"\0")
    import_course(mini_course_dir)
    stored = dict(SourceFile.objects.filter(course=mini_course).values_list("path", "sha256"))
    assert set(stored) == {
        "course.toml",
        "01-first/lesson.md",
        "02-second/lesson.md",
        "02-second/questions.toml",
    }
    text = (mini_course_dir / "02-second" / "questions.toml").read_bytes()
    assert stored["02-second/questions.toml"] == hashlib.sha256(text).hexdigest()


@pytest.mark.django_db
def test_export_command_refuses_a_folder_that_is_not_empty_unless_forced(mini_course, tmp_path):
    out = tmp_path / "out"
    (out / "mini").mkdir(parents=True)
    (out / "mini" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(CommandError, match="is not empty"):
        call_command("export_course", "mini", str(out))
    assert not (out / "mini" / "course.toml").exists()
    call_command("export_course", "mini", str(out), force=True)
    assert (out / "mini" / "course.toml").read_bytes() == export_course(mini_course)["course.toml"]
    assert (out / "mini" / "notes.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.django_db
def test_export_command_names_the_courses_there_are_when_the_slug_is_unknown(mini_course, tmp_path):
    with pytest.raises(CommandError, match=r"no course with slug 'maxi' \(courses: mini\)"):
        call_command("export_course", "maxi", str(tmp_path))


@pytest.mark.django_db
def test_a_row_edited_in_the_database_is_not_overwritten_without_force(mini_course, mini_course_dir, capsys):
    question = mini_course.questions.get(slug="first-choice")
    question.prompt_html = "<p>Yönetim panelinde düzeltildi.</p>"  # as the admin could
    question.save()
    source = mini_course_dir / "01-first" / "questions.toml"
    source.write_text(
        source.read_text(encoding="utf-8").replace("iki parçadan", "iki vektörden"), encoding="utf-8"
    )

    with pytest.raises(SystemExit):
        call_command("import_course", str(mini_course_dir))
    err = capsys.readouterr().err
    assert (
        "mini/01-first/questions.toml:1: question first-choice was changed in the database since the "
        "last import; this import would overwrite it (changed: prompt_html): import with --force to do so"
    ) in err
    assert "the database is unchanged" in err
    question.refresh_from_db()
    assert question.prompt_html == "<p>Yönetim panelinde düzeltildi.</p>"
    assert (
        "iki parçadan" in export_course(mini_course)["01-first/questions.toml"].decode()
    )  # the old file is kept

    call_command("import_course", str(mini_course_dir), force=True)
    assert "~ question first-choice (changed: prompt_html)" in capsys.readouterr().out
    question.refresh_from_db()
    assert "iki vektörden" in question.prompt_html
    assert import_course(mini_course_dir).changes == []  # forced once, the guard is satisfied


@pytest.mark.django_db
def test_an_edit_the_files_make_too_is_no_loss_and_imports(mini_course, mini_course_dir):
    lesson = mini_course.lessons.get(slug="first")
    lesson.title = "İlk ders"
    lesson.save()
    path = mini_course_dir / "01-first" / "lesson.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Birinci ders", "İlk ders"), encoding="utf-8")
    assert import_course(mini_course_dir).changes == []
    assert "İlk ders" in export_course(mini_course)["01-first/lesson.md"].decode()


@pytest.mark.django_db
def test_an_edited_row_is_protected_even_when_its_file_did_not_change(mini_course, mini_course_dir):
    question = mini_course.questions.get(slug="first-choice")
    question.explanation_html = "<p>ek</p>"
    question.save()
    with pytest.raises(ImportRefused) as refused:
        import_course(mini_course_dir)
    assert "question first-choice was changed" in str(refused.value.problems[0])
    assert "(changed: explanation_html)" in str(refused.value.problems[0])


@pytest.mark.django_db
def test_a_file_changed_in_the_database_is_not_overwritten_without_force(mini_course, mini_course_dir):
    stored = SourceFile.objects.get(course=mini_course, path="course.toml")
    stored.data = bytes(stored.data) + b"# Tarayicida eklendi.\n"
    stored.sha256 = hashlib.sha256(stored.data).hexdigest()
    stored.save()
    with pytest.raises(ImportRefused) as refused:
        import_course(mini_course_dir)
    assert [str(p) for p in refused.value.problems] == [
        "mini/course.toml:1: this file was changed in the database since the last import; this import "
        "would overwrite it: import with --force to do so"
    ]
    assert export_course(mini_course)["course.toml"].endswith(b"# Tarayicida eklendi.\n")
    import_course(mini_course_dir, force=True)
    assert export_course(mini_course)["course.toml"] == (mini_course_dir / "course.toml").read_bytes()


@pytest.mark.django_db
def test_a_retired_row_restored_by_the_import_counts_as_overwritten(mini_course, mini_course_dir):
    mini_course.lessons.filter(slug="second").update(retired=True)  # the admin's retire action
    with pytest.raises(ImportRefused) as refused:
        import_course(mini_course_dir)
    assert "lesson second was changed in the database" in str(refused.value.problems[0])
    assert "(restored)" in str(refused.value.problems[0])


@pytest.mark.django_db
def test_a_folder_over_the_size_cap_is_refused_with_the_file_named(mini_course_dir, monkeypatch):
    import courses.exporter

    monkeypatch.setattr(courses.exporter, "MAX_FILE_BYTES", 100)
    with pytest.raises(ImportRefused) as refused:
        import_course(mini_course_dir)
    assert "a course file may have at most 100" in str(refused.value.problems[0])
    assert not Course.objects.exists()


def test_symbolic_links_are_left_out_of_a_course_folder(tmp_path):
    course = tmp_path / "c"
    shutil.copytree(FIXTURES / "mini", course)
    secret = tmp_path / "secret.txt"
    secret.write_text("gizli", encoding="utf-8")
    (course / "01-first" / "notes.txt").symlink_to(secret)
    (course / "linked").symlink_to(tmp_path, target_is_directory=True)
    assert all("notes" not in path and not path.startswith("linked") for path in read_folder(course))


def test_the_same_files_make_the_same_zip():
    files = {"course.toml": b'slug = "x"\n', "01-a/lesson.md": b"+++\n+++\n"}
    assert zip_bytes(files, "x") == zip_bytes(dict(files), "x")
