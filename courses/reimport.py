"""The admin's "re-import from the folder", run by a grading worker.

An import runs every reference solution and misconception variant in the sandbox, which
never happens in a web request: the admin queues the course and a worker imports it. The
queue's own row (django-tasks-db keeps each task with its status and return value) is the
record of the run; the course's admin page shows the latest one. No second job table.
"""

from pathlib import Path

from django.tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult

from .models import Course
from .uploads import course_lock, import_folder


def queue_reimport(course: Course) -> bool:
    """Queue a re-import of ``course``; False (nothing queued) when one is already waiting or
    running: a second would only import the same folder again."""
    latest = latest_reimport(course)
    if latest is not None and latest.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING):
        return False
    reimport_course.enqueue(course.pk)
    return True


@task(queue_name="default", priority=-50)
def reimport_course(course_id: int) -> dict:
    """Import a course again from its folder (the admin's action); below students' grading."""
    return run_reimport(course_id)


def run_reimport(course_id: int) -> dict:
    """The task body: sync the folder into the database, or change nothing on any problem.
    The import of an upload does the same (courses.uploads.import_folder)."""
    course = Course.objects.get(pk=course_id)
    with course_lock(course.slug):
        # The folder as it is once no other import of the course runs: an upload may have
        # replaced (and removed) the one the course read when this re-import was queued.
        source_path = Course.objects.values_list("source_path", flat=True).get(pk=course_id)
        outcome = import_folder(Path(source_path))
    outcome.pop("course", None)
    return outcome


def latest_reimport(course: Course) -> DBTaskResult | None:
    """The course's most recent re-import: waiting, running or finished with its outcome."""
    return (
        DBTaskResult.objects.filter(task_path=reimport_course.module_path, args_kwargs__args=[course.pk])
        .order_by("-enqueued_at")
        .first()
    )
