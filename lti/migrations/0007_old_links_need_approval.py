"""Links made before link approvals existed (0004) are judged by today's rules, and the
instructor rights old launches gave become grants the LMS's roster can take back.

Under the old rules any instructor of any LMS course could link it to the platform's Dikkat
course and became its instructor. Now:
- a link made by a superuser, or by someone who teaches the course with a Dikkat password (rights
  given in Dikkat), counts as approved by them; a link an administrator set in the admin (no
  one launched to make it) holds;
- any other link waits for the approval of one of the course's instructors (its students are
  refused until then), and the instructor rights launches gave through it are taken back;
- rights launches gave through a link that holds are recorded as grants of that LMS course.
Rights of an account made by a launch (it has no usable password) are the ones launches gave.
"""

from django.db import migrations, models
from django.utils import timezone

UNUSABLE_PASSWORD_PREFIX = "!"  # django.contrib.auth.hashers


def old_links_need_approval(apps, schema_editor):
    LtiContext = apps.get_model("lti", "LtiContext")
    LtiUser = apps.get_model("lti", "LtiUser")
    InstructorGrant = apps.get_model("lti", "InstructorGrant")
    now = timezone.now()
    judged = {}  # (course id, platform id) -> {"kept": [...], "reset": [...]}
    for context in LtiContext.objects.filter(course__isnull=False, approved_by__isnull=True).select_related(
        "course", "linked_by"
    ):
        course, linker = context.course, context.linked_by
        teaches_here = (
            linker is not None
            and course.instructors.filter(pk=linker.pk).exists()
            and not linker.password.startswith(UNUSABLE_PASSWORD_PREFIX)
        )
        sides = judged.setdefault((course.pk, context.platform_id), {"kept": [], "reset": []})
        if linker is None:  # set by an administrator in the admin: their word holds
            sides["kept"].append(context)
        elif linker.is_superuser or teaches_here:
            LtiContext.objects.filter(pk=context.pk).update(approved_by=linker)
            sides["kept"].append(context)
        else:
            LtiContext.objects.filter(pk=context.pk).update(
                course=None, requested_course=course, requested_at=context.linked_at or now, linked_at=None
            )
            sides["reset"].append(context)
    # Which LMS course gave an account its rights was not recorded: when one of the course's old
    # links on that platform now waits, launch-made instructors lose their rights (a launch
    # through a link that holds gives them back); else each holding link grants them, and the
    # rights end when no roster lists them as an instructor any more.
    for (course_id, platform_id), sides in judged.items():
        course = (sides["kept"] + sides["reset"])[0].course
        made_by_launches = list(
            LtiUser.objects.filter(
                platform_id=platform_id,
                user__in=course.instructors.all(),
                user__is_staff=False,
                user__password__startswith=UNUSABLE_PASSWORD_PREFIX,
            )
            .values_list("user_id", flat=True)
            .distinct()
        )
        for context in sides["reset"] or sides["kept"]:
            for user_id in made_by_launches:
                InstructorGrant.objects.update_or_create(
                    context=context,
                    user_id=user_id,
                    defaults={
                        "granted_at": context.linked_at or now,
                        "revoked_at": now if sides["reset"] else None,
                    },
                )
        if sides["reset"]:
            course.instructors.remove(*made_by_launches)


class Migration(migrations.Migration):
    dependencies = [
        ("lti", "0006_lineitem_claim"),
    ]

    operations = [
        migrations.AddField(
            model_name="platform",
            name="jwks_tried_at",
            field=models.DateTimeField(
                blank=True, editable=False, null=True, verbose_name="keys last asked for"
            ),
        ),
        migrations.RunPython(old_links_need_approval, migrations.RunPython.noop),
    ]
