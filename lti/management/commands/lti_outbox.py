"""The grade outbox at a glance: what was sent to the LMSs, what waits, what fails and why."""

import json

from django.core.management.base import BaseCommand

from lti.outbox import Delivery, ScoreOutbox
from lti.passback import course_rows, target_name


class Command(BaseCommand):
    help = (
        "Show the scores sent to LMSs (LTI grade passback): the newest of each student and link, "
        "sent, pending or failing with the platform's error; --retry sends the failing ones again."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )
        parser.add_argument("--retry", action="store_true", help="send every failing score again")

    def handle(self, *args, as_json: bool = False, retry: bool = False, **options):
        rows = course_rows()
        if retry:
            failing = [row.pk for row in rows if row.delivery == Delivery.FAILING]
            queued = ScoreOutbox.objects.requeue(failing)
            if not as_json:
                self.stdout.write(f"{queued} failing scores queued to be sent again.")
            rows = course_rows()
        items = [
            {
                "user": row.user.username,
                "item": target_name(row.link),
                "score": row.score,
                "status": row.delivery,
                "tries": row.attempts,
                "last_error": row.last_error,
            }
            for row in rows
        ]
        counts = {
            state: sum(item["status"] == state for item in items) for state in ("pending", "failing", "sent")
        }
        if as_json:
            self.stdout.write(json.dumps({**counts, "items": items}, ensure_ascii=False))
            return
        self.stdout.write(f"{counts['sent']} sent, {counts['pending']} pending, {counts['failing']} failing")
        for item in items:
            score = "-" if item["score"] is None else f"{item['score']:g}"
            line = (
                f"{item['status']:<8} {item['user']:<20} {item['item']:<30} {score:>6}  tries {item['tries']}"
            )
            if item["last_error"]:
                line += f"  {item['last_error']}"
            self.stdout.write(line)
