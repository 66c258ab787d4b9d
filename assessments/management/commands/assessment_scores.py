import json

from django.core.management.base import BaseCommand, CommandError

from assessments.models import Assessment
from assessments.scoring import enrolled_students, student_scores


class Command(BaseCommand):
    help = "Scores of one assessment per student (points; --json for outside tools)."

    def add_arguments(self, parser):
        parser.add_argument("course", help="course slug")
        parser.add_argument("assessment", help="assessment slug")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, course: str, assessment: str, as_json: bool = False, **options):
        found = (
            Assessment.objects.filter(course__slug=course, slug=assessment).select_related("course").first()
        )
        if found is None:
            raise CommandError(f"no assessment {assessment!r} in course {course!r}")
        rows = student_scores(found, enrolled_students(found))
        if as_json:
            # The contract: {"assessment", "students": [{"username", "total", "items":
            # [{"item", "score", "credit", "late", "manual"}]}]}
            self.stdout.write(
                json.dumps(
                    {"assessment": found.slug, "students": [r.as_json() for r in rows]}, ensure_ascii=False
                )
            )
            return
        for row in rows:
            items = "  ".join(
                f"{i.item}={i.score:g}{'*' if i.manual else ''}{' (late)' if i.late else ''}"
                for i in row.items
            )
            self.stdout.write(f"{row.user.username}: {row.total:g}/{row.possible:g}  {items}")
