import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import URLValidator
from django.db import transaction

from courses.models import Course
from lti.endpoints import absolute, tool_endpoints
from lti.models import Deployment, Platform, RegistrationInvite


def platform_dict(platform: Platform) -> dict:
    """One registration as `lti_platform add/list --json` print it: the platform and the tool's
    own endpoints to give it (docs/lti.md)."""
    return {
        "platform": {
            "id": platform.pk,
            "name": platform.name,
            "issuer": platform.issuer,
            "client_id": platform.client_id,
            "deployment_ids": platform.deployment_ids(),
            "auth_url": platform.auth_url,
            "token_url": platform.token_url,
            "jwks_url": platform.jwks_url,
            "course": platform.course.slug if platform.course else None,
            "active": platform.active,
        },
        **tool_endpoints(),
    }


class Command(BaseCommand):
    help = "Register an LTI 1.3 platform (an LMS) or list the registered ones."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="register a platform (again: update its URLs, add deployments)")
        add.add_argument("--issuer", required=True, help="the platform's issuer (iss), a URL")
        add.add_argument("--client-id", required=True, help="the client id the platform gave Dikkat")
        add.add_argument(
            "--deployment", required=True, action="append", help="a deployment id (may be repeated)"
        )
        add.add_argument("--auth-url", required=True, help="the platform's OIDC authorisation endpoint")
        add.add_argument("--token-url", required=True, help="the platform's OAuth2 access token endpoint")
        add.add_argument("--jwks-url", required=True, help="the platform's public key set (JWKS)")
        add.add_argument("--course", help="slug of the Dikkat course its instructors may link to")
        add.add_argument("--name", default="", help="a name for the admin")
        add.add_argument("--json", action="store_true", dest="as_json", help="print exactly one JSON object")
        invite = sub.add_parser(
            "invite", help="a one-time address for LTI Dynamic Registration (give it to the LMS)"
        )
        invite.add_argument("--course", help="slug of the Dikkat course its instructors may link to")
        invite.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )
        listing = sub.add_parser("list", help="the registered platforms")
        listing.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON array"
        )

    def handle(self, *args, action: str, as_json: bool = False, **options):
        if action == "list":
            platforms = [platform_dict(p) for p in Platform.objects.select_related("course")]
            if as_json:
                self.stdout.write(json.dumps(platforms, ensure_ascii=False))
            else:
                for item in platforms:
                    p = item["platform"]
                    deployments = ", ".join(p["deployment_ids"])
                    self.stdout.write(
                        f"{p['id']}: {p['issuer']} client {p['client_id']} deployments {deployments}"
                    )
            return
        if action == "invite":
            self.invite(options.get("course"), as_json)
            return
        platform = self.add(options)
        if as_json:
            self.stdout.write(json.dumps(platform_dict(platform), ensure_ascii=False))
        else:
            self.stdout.write(f"Registered {platform}; give the platform these endpoints:")
            for name, url in tool_endpoints().items():
                self.stdout.write(f"  {name}: {url}")

    def invite(self, course_slug: str | None, as_json: bool) -> None:
        course = None
        if course_slug:
            course = Course.objects.active().filter(slug=course_slug).first()
            if course is None:
                raise CommandError(f"--course: no active course {course_slug!r}")
        invite = RegistrationInvite.objects.create(course=course)
        url = absolute("register", invite.token)
        if as_json:
            answer = {
                "registration_url": url,
                "expires_at": invite.expires_at.isoformat(),
                "course": course_slug,
            }
            self.stdout.write(json.dumps(answer))
        else:
            self.stdout.write(
                f"Give this address to the LMS (once, until {invite.expires_at:%Y-%m-%d %H:%M}):"
            )
            self.stdout.write(f"  {url}")

    def add(self, options: dict) -> Platform:
        check_url = URLValidator(schemes=["http", "https"])
        for option in ("issuer", "auth_url", "token_url", "jwks_url"):
            try:
                check_url(options[option])
            except ValidationError:
                flag = "--" + option.replace("_", "-")
                raise CommandError(f"{flag}: {options[option]!r} is not an http(s) URL") from None
        deployments = [d.strip() for d in options["deployment"]]
        if not all(deployments):
            raise CommandError("--deployment: an empty deployment id")
        client_id = options["client_id"].strip()
        if not client_id:
            raise CommandError("--client-id: empty")
        course = None
        if options.get("course"):
            course = Course.objects.active().filter(slug=options["course"]).first()
            if course is None:
                raise CommandError(f"--course: no active course {options['course']!r}")
        with transaction.atomic():
            platform, _created = Platform.objects.update_or_create(
                issuer=options["issuer"],
                client_id=client_id,
                defaults={
                    "auth_url": options["auth_url"],
                    "token_url": options["token_url"],
                    "jwks_url": options["jwks_url"],
                    **({"course": course} if course else {}),
                    **({"name": options["name"]} if options["name"] else {}),
                },
            )
            for deployment_id in deployments:
                Deployment.objects.get_or_create(platform=platform, deployment_id=deployment_id)
        return platform
