import secrets

from django.contrib.auth.models import Permission, User
from django.core.management.base import BaseCommand

from courses.models import Course

DEMO_USERS = ("student", "instructor", "admin")


class Command(BaseCommand):
    help = (
        "Create the demo accounts student / instructor / admin with generated passwords, "
        "printed once and stored nowhere else. Existing accounts are left alone unless --reset."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reset", action="store_true", help="give existing demo accounts new passwords")

    def handle(self, *args, reset: bool = False, **options):
        created = []
        for username in DEMO_USERS:
            user, is_new = User.objects.get_or_create(username=username)
            if is_new or reset:
                password = secrets.token_urlsafe(9)
                user.set_password(password)
                user.email = f"{username}@example.com"
                user.is_staff = username in ("instructor", "admin")
                user.is_superuser = username == "admin"
                user.save()
                created.append((username, password))
            if username == "instructor":
                user.user_permissions.set(
                    Permission.objects.filter(
                        content_type__app_label="courses",
                        codename__in=[
                            "view_course",
                            "change_course",
                            "view_lesson",
                            "change_lesson",
                            "view_question",
                            "change_question",
                            "view_exercise",
                            "view_enrollment",
                        ],
                    )
                )
                for course in Course.objects.all():
                    course.instructors.add(user)
            if username == "student":
                for course in Course.objects.active():
                    course.enroll(user, course.enrollment_code)
        if created:
            self.stdout.write(self.style.SUCCESS("Demo accounts (passwords shown only now):"))
            for username, password in created:
                self.stdout.write(f"  {username:<11} {password}")
        else:
            self.stdout.write(
                "Demo accounts student / instructor / admin exist; "
                "`python manage.py demo_accounts --reset` prints new passwords."
            )
