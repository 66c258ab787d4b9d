import json
from dataclasses import asdict

from django.core.management.base import BaseCommand

from lti.models import LtiContext
from lti.roster import sync_roster
from lti.services import ServiceFailed


class Command(BaseCommand):
    help = "Read the rosters (LTI Names and Roles) of the linked LMS courses; dropped members are marked."

    def add_arguments(self, parser):
        parser.add_argument("--context", type=int, help="only this LMS course (its id in the admin)")
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, context: int | None = None, as_json: bool = False, **options):
        contexts = LtiContext.objects.select_related("platform", "course").exclude(memberships_url="")
        if context is not None:
            contexts = contexts.filter(pk=context)
        report, failed = [], False
        for lms_course in contexts:
            try:
                entry = {
                    "context": lms_course.pk,
                    "title": str(lms_course),
                    **asdict(sync_roster(lms_course)),
                }
            except ServiceFailed as error:
                entry, failed = (
                    {"context": lms_course.pk, "title": str(lms_course), "error": str(error)},
                    True,
                )
            report.append(entry)
            if not as_json:
                self.stdout.write(json.dumps(entry, ensure_ascii=False))
        if as_json:
            self.stdout.write(json.dumps({"contexts": report}, ensure_ascii=False))
        if failed:
            raise SystemExit(1)
