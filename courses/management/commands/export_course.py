from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from courses.exporter import edited_since_import, export_course, folder_name, write_folder
from courses.models import Course


class Command(BaseCommand):
    help = (
        "Write a course's files, byte for byte as its last import read them, into DIRECTORY/<course folder>: "
        "the folder keeps the name it was imported from, so importing it again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the course's slug")
        parser.add_argument("directory", type=Path, help="the folder to write the course folder into")
        parser.add_argument(
            "--force",
            action="store_true",
            help="write into a course folder that is not empty (its files of the same name are replaced, others stay)",
        )

    def handle(self, *args, slug: str, directory: Path, force: bool, **options):
        course = Course.objects.filter(slug=slug).first()
        if course is None:
            known = ", ".join(Course.objects.order_by("slug").values_list("slug", flat=True)) or "none"
            raise CommandError(f"no course with slug {slug!r} (courses: {known})")
        files = export_course(course)
        if not files:
            raise CommandError(f"{slug} has no stored files: import it from its folder once, then export it")
        target = directory / folder_name(course)
        for path in (directory, target):
            if path.exists() and not path.is_dir():
                raise CommandError(f"{path} is a file, not a folder")
        if target.is_dir() and any(target.iterdir()) and not force:
            raise CommandError(
                f"{target} is not empty: choose another folder, or add --force to write over its files"
            )
        write_folder(files, target)
        for key in (key for key in edited_since_import(course) if not key.startswith("file ")):
            self.stderr.write(
                f"warning: {key} was changed in the database since the last import; "
                "these files hold it as it was imported"
            )
        self.stdout.write(f"{slug}: {len(files)} file(s) written to {target}")
