"""`manage.py grade EXERCISE_SLUG FILE [--json] [--variant N | --student USERNAME]` and
`manage.py grade --list`."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext

from courses.commandline import find_one, variant_asked
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
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--variant", type=int, help="grade against this variant's hidden cases (default 0)"
        )
        which.add_argument("--student", metavar="USERNAME", help="grade against this student's own variant")

    def handle(
        self, *args, slug=None, file=None, as_json=False, list=False, variant=None, student=None, **options
    ):
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
        exercise = find_one(
            [Exercise.objects], slug, "exercise", hint="`manage.py grade --list` shows the slugs"
        )
        index = variant_asked(exercise, variant, student) or 0
        try:
            source = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        if problem := sandbox_problem():
            raise CommandError(f"the sandbox cannot run on this host: {problem}")
        directory = bundles.variant_dir(exercise_bundle(exercise), index)
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
        report = {"exercise": exercise.slug, "variant": index, **result.to_dict(gettext)}
        if as_json:
            self.stdout.write(json.dumps(report, ensure_ascii=False))
            return
        of_variant = f" (variant {index})" if exercise.variant_count > 1 else ""
        self.stdout.write(
            f"{exercise.slug}{of_variant}: {report['verdict']} — score {report['score']:.2f} ({report['duration_ms']} ms)"
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
