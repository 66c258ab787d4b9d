"""The admin's re-import: pressing it again while one waits or runs queues no second import."""

import pytest
from django.tasks import TaskResultStatus
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from courses.importer import import_course
from courses.models import Course

pytestmark = pytest.mark.django_db


def reimport(client, course):
    changelist = reverse("admin:courses_course_changelist")
    return client.post(changelist, {"action": "reimport", "_selected_action": [course.pk]}, follow=True).text


def test_a_second_reimport_while_one_waits_or_runs_is_not_queued_and_the_admin_is_told(
    client, make_user, mini_course_dir
):
    import_course(mini_course_dir)
    course = Course.objects.get(slug="mini")
    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))

    assert "sıraya alındı" in reimport(client, course)
    page = reimport(client, course)
    assert "bekleyen ya da süren bir yeniden içe aktarma zaten var; ikincisi sıraya alınmadı" in page
    assert DBTaskResult.objects.count() == 1

    DBTaskResult.objects.update(status=TaskResultStatus.RUNNING)
    assert "zaten var" in reimport(client, course)
    assert DBTaskResult.objects.count() == 1

    DBTaskResult.objects.update(status=TaskResultStatus.SUCCESSFUL)
    page = reimport(client, course)
    assert "sıraya alındı" in page and "zaten var" not in page
    assert DBTaskResult.objects.count() == 2
