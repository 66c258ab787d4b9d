"""The "Kontrol et" (check) of an exercise's drafts: the checks ``validate_course`` makes of an exercise
(the reference solution passes every case, every catalogued misconception variant fails a
hidden case, in every variant of the exercise), run by a grading worker on the exercise's
files as they were when the instructor asked (a studio.ExerciseCheck, one more job of the one
queue), with the result per case and per misconception for the page.

The worker lays the files into a small course of their own (course.toml and a lesson around
the exercise folder, under the course's and the lesson's real folder names, so problems name
the files as the editor does) and runs ``courses.exercises.check_exercises`` on it with
``build``: the grading data it stores is keyed by the exercise's content, so the import of
the publish that follows finds it built.
"""

import logging
import tempfile
from pathlib import Path

from django.db import transaction
from django.tasks import task
from django.utils import timezone

from courses.authoring import load_course
from courses.exercises import check_exercises
from courses.exporter import folder_name, write_folder
from courses.models import Course
from grader.bundles import bundle_path, prepare
from grader.core import ReferenceFailed, SandboxUnavailable, SpecError, Verdict, grade

from .drafts import EXERCISE_FILE, working_copy
from .models import ExerciseCheck, folder_digest

log = logging.getLogger("grader")


def start(course: Course, folder: str, user) -> ExerciseCheck:
    """A check of the exercise's files as they are in the working copy now, queued when stored;
    one of the same files still waiting or done is returned instead."""
    files = working_copy(course)
    if f"{folder}/{EXERCISE_FILE}" not in files:
        raise ValueError(f"{folder} is not an exercise folder")
    digest = folder_digest(files, folder)
    with transaction.atomic():
        same = ExerciseCheck.objects.filter(course=course, folder=folder, digest=digest)
        earlier = same.exclude(status=ExerciseCheck.Status.FAILED).first()
        if earlier is not None:
            return earlier
        check = ExerciseCheck.objects.create(
            course=course,
            folder=folder,
            digest=digest,
            files={
                path: data.decode("utf-8", errors="replace")
                for path, data in files.items()
                if path.startswith(f"{folder}/")
            },
            requested_by=user,
            enqueued_at=timezone.now(),
        )
        ExerciseCheck.objects.enqueue(check.pk, stamped=True)
    return check


@task(queue_name="default", priority=-50)
def check_exercise_draft(check_id: int) -> str:
    """Check an exercise's draft files for its instructors."""
    taken = ExerciseCheck.objects.select_related("course").take(check_id, ExerciseCheck.lease_duration)
    if taken is None:
        return "skipped"
    check, token = taken
    try:
        report = run(check)
    except Exception as exc:
        log.exception("exercise check %s failed", check_id)
        stored = ExerciseCheck.objects.give_up(check_id, token, repr(exc))
        return ExerciseCheck.Status.FAILED if stored else "stale"
    stored = ExerciseCheck.objects.finish(check_id, token, passed=not report["problems"], report=report)
    return ExerciseCheck.Status.DONE if stored else "stale"


def _course_files(check: ExerciseCheck) -> dict[str, bytes]:
    lesson = check.folder.split("/")[0]
    return {
        "course.toml": f'slug = "{check.course.slug}"\ntitle = "check"\n'.encode(),
        f"{lesson}/lesson.md": b'+++\nslug = "check"\ntitle = "check"\n+++\n\ncheck\n',
        **{path: text.encode() for path, text in check.files.items()},
    }


def run(check: ExerciseCheck) -> dict:
    """The checks of validate_course on the exercise, and what each case and variant did."""
    report: dict = {"problems": [], "cases": [], "misconceptions": [], "variants": 1}
    with tempfile.TemporaryDirectory(prefix="dikkat-check-") as place:
        root = Path(place) / folder_name(check.course)
        write_folder(_course_files(check), root)
        source = load_course(root)
        problems = source.problems or check_exercises(source, build=True)
        prefix = f"{root.name}/"
        report["problems"] = [
            {"file": p.file.removeprefix(prefix), "line": p.line, "message": p.message} for p in problems
        ]
        exercises = source.all_exercises()
        if source.problems or not exercises:
            return report
        _details(exercises[0], source.slug, report)
    return report


def _details(exercise, course_slug: str, report: dict) -> None:
    """The reference on each case (of variant 0) and each misconception's verdict, from the
    grading data the check just stored (the reference runs again only when it failed)."""
    report["variants"] = exercise.variant_count
    target = bundle_path("exercises", course_slug, exercise.slug, exercise.content_hash)
    try:
        spec, cases, ref = prepare(
            exercise.spec, exercise.solution_code, source_dir=exercise.directory, target=target
        )
    except ReferenceFailed as failed:
        report["cases"] = [
            {"name": t.name, "hidden": t.hidden, "passed": t.passed, "message": _message(t.message)}
            for t in failed.result.tests
            if t.name and "~" not in t.name  # not the derived (probe, property) cases
        ]
        return
    except (SpecError, SandboxUnavailable):
        return
    shown = [case for case in cases if case.derived is None]
    report["cases"] = [{"name": c.name, "hidden": c.hidden, "passed": True, "message": ""} for c in shown]
    names = {case.name for case in shown}
    for variant in exercise.misconceptions:
        result = grade(variant["source"], spec, cases, ref)
        missed = [t.name for t in result.tests if t.hidden and not t.passed and t.name in names]
        report["misconceptions"].append(
            {
                "tag": variant["tag"],
                "file": variant["file"],
                "caught": result.verdict != Verdict.PASSED and bool(missed),
                "verdict": str(result.verdict),
                "failed": missed,
            }
        )


def _message(message) -> str:
    return message.render() if message is not None else ""
