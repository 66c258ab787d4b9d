"""Course files: validation names file and line, import is idempotent and never loses data."""

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from courses.authoring import load_course
from courses.importer import ImportRefused, import_course
from courses.models import Course, Lesson, LessonProgress, Question

BUILT_IN = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"


def problems_of(root: Path) -> list[str]:
    return [str(p) for p in load_course(root).problems]


def test_built_in_course_validates_without_problems(capsys):
    call_command("validate_course", str(BUILT_IN), "--json")  # SystemExit(1) on any problem
    summary = json.loads(capsys.readouterr().out)
    assert summary["course"] == "attention"
    assert summary["problems"] == []
    first = summary["lessons"][0]
    assert set(first) == {"slug", "title", "questions", "exercises"}
    assert first["slug"] == "query"


def test_validate_json_prints_one_object_with_problems_and_exits_nonzero(mini_course_dir, capsys):
    (mini_course_dir / "02-second" / "lesson.md").write_text(
        '+++\nslug = "second"\ntitle = "İkinci"\norder = 2\n+++\n\nİlk satır.\n\n$\\nosuchcommand{x}$\n',
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as exit_info:
        call_command("validate_course", str(mini_course_dir), "--json")
    assert exit_info.value.code == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["problems"] == [
        {"file": "mini/02-second/lesson.md", "line": 9, "message": summary["problems"][0]["message"]}
    ]
    assert "\\nosuchcommand" in summary["problems"][0]["message"]
    assert [lesson["slug"] for lesson in summary["lessons"]] == ["first", "second"]
    assert summary["lessons"][0]["questions"] == {"single_choice": 1}


def test_toml_syntax_error_names_its_line(mini_course_dir):
    (mini_course_dir / "01-first" / "questions.toml").write_text(
        '[[questions]]\nslug = "a"\nkind = "single_choice"\nprompt = "unterminated\n', encoding="utf-8"
    )
    [problem] = problems_of(mini_course_dir)
    assert problem.startswith("mini/01-first/questions.toml:4: TOML syntax error")


def test_front_matter_error_line_counts_from_the_top_of_the_file(mini_course_dir):
    (mini_course_dir / "02-second" / "lesson.md").write_text(
        '+++\nslug = "second"\ntitle = \n+++\nMetin.\n', encoding="utf-8"
    )
    [problem] = problems_of(mini_course_dir)
    assert problem.startswith("mini/02-second/lesson.md:3:")


def test_single_choice_with_two_correct_options_is_refused_at_its_line(mini_course_dir):
    path = mini_course_dir / "01-first" / "questions.toml"
    path.write_text(path.read_text(encoding="utf-8") + "correct = true\n", encoding="utf-8")
    [problem] = problems_of(mini_course_dir)
    assert "exactly one correct option, found 2" in problem
    assert problem.startswith("mini/01-first/questions.toml:")


def test_duplicate_slugs_unknown_keys_and_unknown_kinds_are_reported(mini_course_dir):
    (mini_course_dir / "02-second" / "lesson.md").write_text(
        '+++\nslug = "first"\ntitle = "Kopya"\ncolour = "red"\n+++\nMetin.\n', encoding="utf-8"
    )
    (mini_course_dir / "02-second" / "questions.toml").write_text(
        '[[questions]]\nslug = "first-choice"\nkind = "essay"\nprompt = "?"\n', encoding="utf-8"
    )
    problems = problems_of(mini_course_dir)
    assert any("mini/02-second/lesson.md:4: unknown key 'colour'" in p for p in problems)
    assert any("duplicate lesson slug 'first'" in p for p in problems)
    assert any(
        p.startswith("mini/02-second/questions.toml:3: unknown question kind 'essay'") for p in problems
    )
    assert any("duplicate item slug 'first-choice'" in p for p in problems)


def test_exercise_without_solution_is_a_problem(mini_course_dir):
    folder = mini_course_dir / "01-first" / "scores"
    folder.mkdir()
    (folder / "exercise.toml").write_text('slug = "scores"\ntitle = "Skorlar"\n', encoding="utf-8")
    assert any("solution.py is missing" in p for p in problems_of(mini_course_dir))


@pytest.mark.django_db
def test_import_twice_changes_nothing_the_second_time(mini_course_dir):
    first = import_course(mini_course_dir)
    assert "+ course mini (created)" in first.changes
    assert "+ lesson first (created)" in first.changes
    second = import_course(mini_course_dir)
    assert second.changes == []


@pytest.mark.django_db
def test_lesson_html_is_rendered_at_import_with_mathml_and_highlighted_code(mini_course):
    lesson = mini_course.lessons.get(slug="first")
    assert "<math" in lesson.body_html and "<mfrac>" in lesson.body_html
    assert 'class="highlight"' in lesson.body_html


@pytest.mark.django_db
def test_malformed_import_is_refused_whole_and_the_database_is_unchanged(mini_course, mini_course_dir):
    before = list(Lesson.objects.values_list("slug", "title", "retired"))
    (mini_course_dir / "01-first" / "lesson.md").write_text(
        '+++\nslug = "first"\ntitle = "Yeni başlık"\n+++\nMetin.\n', encoding="utf-8"
    )
    (mini_course_dir / "02-second" / "questions.toml").write_text("[[questions]\n", encoding="utf-8")
    with pytest.raises(ImportRefused) as refused:
        import_course(mini_course_dir)
    assert refused.value.problems[0].file == "mini/02-second/questions.toml"
    assert list(Lesson.objects.values_list("slug", "title", "retired")) == before


@pytest.mark.django_db
def test_import_command_refuses_with_file_and_line_and_exit_code(mini_course_dir, capsys):
    (mini_course_dir / "course.toml").write_text('slug = "Mini Kurs"\ntitle = "x"\n', encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        call_command("import_course", str(mini_course_dir))
    assert exit_info.value.code == 1
    assert "mini/course.toml:1: slug 'Mini Kurs'" in capsys.readouterr().err
    assert not Course.objects.exists()


@pytest.mark.django_db
def test_renaming_a_title_keeps_student_progress(mini_course, mini_course_dir, alice):
    lesson = mini_course.lessons.get(slug="first")
    LessonProgress.record_visit(alice, lesson)
    path = mini_course_dir / "01-first" / "lesson.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Birinci ders", "İlk ders"), encoding="utf-8")
    report = import_course(mini_course_dir)
    assert report.changes == ["~ lesson first (changed: title)"]
    lesson.refresh_from_db()
    assert lesson.title == "İlk ders"
    assert LessonProgress.objects.filter(user=alice, lesson=lesson).exists()


@pytest.mark.django_db
def test_removed_lesson_and_question_are_retired_not_deleted(mini_course, mini_course_dir, alice):
    second = mini_course.lessons.get(slug="second")
    LessonProgress.record_visit(alice, second)
    import shutil

    shutil.rmtree(mini_course_dir / "02-second")
    (mini_course_dir / "01-first" / "questions.toml").unlink()
    report = import_course(mini_course_dir)
    assert "- lesson second (retired; student data kept)" in report.changes
    assert "- question first-choice (retired; student data kept)" in report.changes
    second.refresh_from_db()
    assert second.retired
    assert LessonProgress.objects.filter(lesson=second).count() == 1
    assert Question.objects.get(slug="first-choice").retired
    # Bringing it back restores the same row.
    shutil.copytree(Path(__file__).parent / "fixtures" / "mini" / "02-second", mini_course_dir / "02-second")
    import_course(mini_course_dir)
    second.refresh_from_db()
    assert not second.retired


@pytest.mark.sandbox
def test_validate_json_says_what_each_catalogued_variant_breaks(tmp_path, capsys):
    """An exercise with weight probes and a property: validate_course --json adds, per known-wrong
    variant, the properties it breaks and the probe's diagnoses (its other keys unchanged)."""
    root = tmp_path / "lab"
    shutil.copytree(Path(__file__).parent / "fixtures" / "lab", root)
    toml = root / "01-lab" / "attn" / "exercise.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8")
        + '\n[[probes]]\nbase = "*"\nvalues = "V"\nkeys = "K"\n\n[[properties]]\nkind = "permute_keys"\nbase = "*"\n',
        encoding="utf-8",
    )
    call_command("validate_course", str(root), "--json")
    summary = json.loads(capsys.readouterr().out)
    assert summary["problems"] == []
    [entry] = summary["misconceptions"]
    assert (entry["exercise"], entry["tag"]) == ("attn", "no-scaling")
    assert entry["properties_broken"] == []  # a forgotten scaling keeps keys and values paired
    assert entry["diagnoses"] == ["temperature_sqrt_dk"]  # "about 2× too peaked: √d_k = 2"
