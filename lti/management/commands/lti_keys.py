import json

from django.core.management.base import BaseCommand

from lti.models import ToolKey


class Command(BaseCommand):
    help = (
        "Dikkat's own LTI signing keys: `rotate` makes a new key that signs from now on (the old one "
        "stays in the JWKS for LTI_KEY_OVERLAP seconds, older ones are deleted); `list` shows them."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["rotate", "list"])
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, action: str, as_json: bool = False, **options):
        deleted = 0
        if action == "rotate":
            _key, deleted = ToolKey.rotate()
        else:
            ToolKey.current()
        published = {key.kid for key in ToolKey.objects.published()}
        keys = [
            {
                "kid": key.kid,
                "created_at": key.created_at.isoformat(),
                "retired_at": key.retired_at.isoformat() if key.retired_at else None,
                "active": key.retired_at is None,
                "published": key.kid in published,
            }
            for key in ToolKey.objects.all()
        ]
        if as_json:
            self.stdout.write(json.dumps({"keys": keys, "deleted": deleted}))
            return
        for key in keys:
            state = "active" if key["active"] else ("published" if key["published"] else "retired")
            self.stdout.write(f"{key['kid']}  {state}  created {key['created_at']}")
        if deleted:
            self.stdout.write(f"{deleted} expired key(s) deleted")
