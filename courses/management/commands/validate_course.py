import json
from pathlib import Path

from django.core.management.base import BaseCommand

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
            self.stdout.write(json.dumps(source.summary_dict(), ensure_ascii=False))
        else:
            for problem in source.problems:
                self.stdout.write(str(problem))
            questions = len(source.all_questions())
            exercises = len(source.all_exercises())
            self.stdout.write(
                f"{source.slug or path}: {len(source.lessons)} lessons, {questions} questions, "
                f"{exercises} exercises, {len(source.problems)} problem(s)"
            )
        if source.problems:
            raise SystemExit(1)
