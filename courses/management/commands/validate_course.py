import json
from pathlib import Path

from django.core.management.base import BaseCommand

from courses import catalogue
from courses.authoring import load_course
from courses.exercises import check_exercises


class Command(BaseCommand):
    help = "Check every file of a course folder; exits non-zero on any problem."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="course folder (the one holding course.toml)")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, path: Path, as_json: bool = False, **options):
        source = load_course(path)
        if not source.problems:
            source.problems.extend(check_exercises(source, build=False))
        if as_json:
            summary = source.summary_dict()
            if variants := catalogue.report(source):  # what each known-wrong variant breaks
                summary["misconceptions"] = variants
            self.stdout.write(json.dumps(summary, ensure_ascii=False))
        else:
            for problem in source.problems:
                self.stdout.write(str(problem))
            for warning in source.warnings:
                self.stdout.write(f"warning: {warning}")
            for line in catalogue.report_lines(source):
                self.stdout.write(line)
            questions = len(source.all_questions())
            exercises = len(source.all_exercises())
            self.stdout.write(
                f"{source.slug or path}: {len(source.lessons)} lessons, {questions} questions, "
                f"{exercises} exercises, {len(source.problems)} problem(s)"
            )
        if source.problems:
            raise SystemExit(1)
