from pathlib import Path

from django.core.management.base import BaseCommand

from courses.exercises import check_exercises
from courses.importer import ImportRefused, import_course


class Command(BaseCommand):
    help = "Create, update or retire a course from its folder, in one transaction."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="course folder (the one holding course.toml)")
        parser.add_argument(
            "--force",
            action="store_true",
            help="overwrite rows and files changed in the database since the last import",
        )

    def handle(self, *args, path: Path, force: bool, **options):
        try:
            report = import_course(
                path, prepare_exercises=lambda source: check_exercises(source, build=True), force=force
            )
        except ImportRefused as refused:
            for problem in refused.problems:
                self.stderr.write(str(problem))
            self.stderr.write(
                f"Import refused: {len(refused.problems)} problem(s); the database is unchanged."
            )
            raise SystemExit(1) from None
        for line in report.changes:
            self.stdout.write(line)
        for warning in report.warnings:
            self.stdout.write(f"warning: {warning}")
        self.stdout.write(f"{report.course}: {len(report.changes) or 'no'} change(s)")
