"""`manage.py grade EXERCISE_SLUG FILE [--json]` and `manage.py grade --list`."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext

from courses.models import Exercise
from grader import bundles
from grader.core import SandboxUnavailable, grade, sandbox_problem
from grader.grading import exercise_bundle


class Command(BaseCommand):
    help = "Grade a file against an exercise's hidden cases in the sandbox, as the queue would."

    def add_arguments(self, parser):
        parser.add_argument("slug", nargs="?", help="exercise slug (course/slug when ambiguous)")
        parser.add_argument("file", nargs="?", type=Path, help="the Python file to grade")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )
        parser.add_argument("--list", action="store_true", help="list exercise slugs")

    def handle(self, *args, slug=None, file=None, as_json=False, list=False, **options):
        if list:
            for exercise in (
                Exercise.objects.active()
                .select_related("course")
                .order_by("course__slug", "lesson__order", "order")
            ):
                self.stdout.write(f"{exercise.slug}\t{exercise.course.slug}\t{exercise.title}")
            return
        if not slug or not file:
            raise CommandError("usage: manage.py grade EXERCISE_SLUG FILE [--json]  (or --list)")
        exercise = _find_exercise(slug)
        try:
            source = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        if problem := sandbox_problem():
            raise CommandError(f"the sandbox cannot run on this host: {problem}")
        directory = exercise_bundle(exercise)
        if not (directory / "manifest.json").exists():
            raise CommandError(
                f"{exercise.slug} has no grading data yet: run manage.py import_course {exercise.course.source_path}"
            )
        spec, cases, ref = bundles.load(exercise.spec, directory)
        variants = bundles.load_variants(directory)
        try:
            result = grade(source, spec, cases, ref, variants=variants)
        except SandboxUnavailable as exc:
            raise CommandError(f"the sandbox cannot run on this host: {exc}") from None
        report = {"exercise": exercise.slug, **result.to_dict(gettext)}
        if as_json:
            self.stdout.write(json.dumps(report, ensure_ascii=False))
            return
        self.stdout.write(
            f"{exercise.slug}: {report['verdict']} — score {report['score']:.2f} ({report['duration_ms']} ms)"
        )
        if result.message:
            self.stdout.write(f"  {result.message.render(gettext)}")
        for test in report["tests"]:
            mark = "✓" if test["passed"] else "✗"
            hidden = " (gizli)" if test["hidden"] else ""
            self.stdout.write(
                f"  {mark} {test['name']}{hidden}" + (f": {test['message']}" if test["message"] else "")
            )
        if report.get("misconception"):
            self.stdout.write(f"  misconception: {report['misconception']}")
        if report["stdout"]:
            self.stdout.write(
                "  stdout:\n" + "\n".join("    " + line for line in report["stdout"].splitlines())
            )


def _find_exercise(slug: str) -> Exercise:
    found = Exercise.objects.matching(slug)
    if not found:
        raise CommandError(f"unknown exercise {slug!r}; `manage.py grade --list` shows the slugs")
    if len(found) > 1:
        raise CommandError(
            f"several courses have {slug!r}; use one of: "
            + ", ".join(f"{e.course.slug}/{e.slug}" for e in found)
        )
    return found[0]
