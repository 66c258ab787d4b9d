"""Rows stored before the one job model keep their meaning after its migration."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = [pytest.mark.queue, pytest.mark.django_db(transaction=True)]

BEFORE = [("grader", "0008_submission_preview"), ("courses", "0007_labels")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_old_rows_get_the_one_status_vocabulary():
    old = migrate(BEFORE)
    try:
        user = old.get_model("auth", "User").objects.create(username="ogr")
        course = old.get_model("courses", "Course").objects.create(slug="c", title="C")
        lesson = old.get_model("courses", "Lesson").objects.create(course=course, slug="l", title="L")
        exercise = old.get_model("courses", "Exercise").objects.create(
            course=course, lesson=lesson, slug="e", title="E", spec={}
        )
        submission = old.get_model("grader", "Submission")
        rows = {
            "graded": ("done", "passed"),
            "grader_failed": ("done", "internal_error"),
            "waiting": ("queued", ""),
        }
        ids = {
            name: submission.objects.create(
                user=user, exercise=exercise, code="x", code_hash=name, status=status, verdict=verdict
            ).pk
            for name, (status, verdict) in rows.items()
        }
        started = timezone.now() - timedelta(hours=1)
        regrade = old.get_model("grader", "Regrade").objects.create(
            exercise=exercise, content_hash="h", created_at=started
        )
        item = old.get_model("grader", "RegradeItem")
        done_item = item.objects.create(regrade=regrade, submission_id=ids["graded"], done=True)
        open_item = item.objects.create(regrade=regrade, submission_id=ids["grader_failed"], done=False)
        check = old.get_model("grader", "ItemCheck").objects.create(
            exercise=exercise, status="running", started_at=started
        )
    finally:
        new = migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    submission = new.get_model("grader", "Submission")
    assert dict(submission.objects.values_list("code_hash", "status")) == {
        "graded": "done",
        "grader_failed": "failed",  # the job failed; its verdict still says internal_error
        "waiting": "queued",
    }
    assert submission.objects.get(pk=ids["grader_failed"]).verdict == "internal_error"
    item = new.get_model("grader", "RegradeItem")
    assert item.objects.get(pk=done_item.pk).status == "done"
    waiting = item.objects.get(pk=open_item.pk)
    assert waiting.status == "queued" and waiting.enqueued_at == started  # the sweeper will queue it
    check = new.get_model("grader", "ItemCheck").objects.get(pk=check.pk)
    assert check.status == "running" and check.lease_expires_at is not None  # the sweeper will take it back
