"""One queue for every job: item checks and regrades whose worker died are swept like
submissions, and a new kind of job is swept without touching the sweeper."""

from datetime import timedelta
from unittest import mock

import pytest
from django.apps import apps
from django.db import connection, models
from django.tasks import task
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from grader import regrade as regrades
from grader.core import GradeResult, Verdict
from grader.models import ItemCheck, RegradeItem, Submission
from jobs.models import Job
from jobs.sweeper import job_models, release, sweep

pytestmark = [pytest.mark.queue, pytest.mark.django_db(transaction=True)]

LEASE = timedelta(minutes=5)


def worker_dies_holding(model: type[Job], pk: int) -> None:
    """A worker claims the job and is killed: its lease runs out."""
    assert model.objects.claim(pk, LEASE) is not None
    model.objects.filter(pk=pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def passes(*args, **kwargs) -> GradeResult:
    return GradeResult(verdict=Verdict.PASSED, score=1.0)


def test_every_kind_of_queued_work_is_one_job_model():
    labels = {model._meta.label for model in job_models()}
    assert labels == {
        "grader.Submission",
        "grader.ItemCheck",
        "grader.RegradeItem",
        "courses.Attempt",
        "courses.AnswerPreview",
        "studio.ExerciseCheck",
        "studio.AnswerRegradeItem",  # a code blank's answer graded again after a publish
        "lti.ScoreOutbox",  # the LTI grade outbox: swept with the rest
    }


# --- item checks ---------------------------------------------------------------------------


def test_an_item_check_whose_worker_died_is_run_again_by_the_next_worker(client, teacher, lab, run_queue):
    client.force_login(teacher)
    url = reverse("instructors:test_item", args=["lab", "attn"])
    client.post(url)
    check = ItemCheck.objects.get()
    worker_dies_holding(ItemCheck, check.pk)
    assert sweep() == {"grader.ItemCheck": (1, 0)}
    with mock.patch("grader.itemcheck.grade", side_effect=passes):
        run_queue()
    check.refresh_from_db()
    assert (check.status, check.tries) == ("done", 2)
    assert check.runs[0]["verdict"] == "passed"
    assert "geçti" in client.get(url).text


def test_an_item_check_that_keeps_losing_its_worker_is_given_up_and_says_so(client, teacher, lab, settings):
    settings.GRADING_MAX_TRIES = 1
    client.force_login(teacher)
    url = reverse("instructors:test_item", args=["lab", "attn"])
    client.post(url)
    check = ItemCheck.objects.get()
    worker_dies_holding(ItemCheck, check.pk)
    assert sweep() == {"grader.ItemCheck": (0, 1)}
    check.refresh_from_db()
    assert check.status == "failed" and "worker lost" in check.last_error
    page = client.get(url).text
    assert "Denetim notlandırıcı tarafında başarısız oldu" in page
    assert '<button type="submit" disabled' not in page  # the check can be run again
    client.post(url)  # and a new check can be asked for
    assert ItemCheck.objects.filter(status="queued").count() == 1


def test_a_check_left_waiting_with_no_worker_at_all_says_it_stopped_until_a_worker_sweeps_it(
    client, teacher, lab, settings
):
    client.force_login(teacher)
    url = reverse("instructors:test_item", args=["lab", "attn"])
    client.post(url)
    check = ItemCheck.objects.get()
    assert not check.is_lost and "Sırası bekleniyor" in client.get(url).text
    long_ago = timezone.now() - check.lease_duration() - timedelta(seconds=settings.GRADING_REQUEUE_AFTER + 1)
    ItemCheck.objects.update(created_at=long_ago, enqueued_at=long_ago)
    assert "Denetim bitmeden durdu" in client.get(url).text
    assert sweep() == {"grader.ItemCheck": (1, 0)}  # a worker starts: its sweeper queues it again
    page = client.get(url).text
    assert "Sırası bekleniyor" in page and "Denetim bitmeden durdu" not in page


# --- regrades ------------------------------------------------------------------------------


@pytest.fixture
def regrade(teacher, make_user, lab):
    student = make_user("ogr")
    lab.enroll(student)
    attn = lab.exercises.get(slug="attn")
    Submission.objects.create(
        user=student,
        exercise=attn,
        code="x = 1",
        code_hash="x",
        status="done",
        verdict="failed",
        score=0.0,
        graded_hash=attn.content_hash,
    )
    return regrades.start(attn, teacher)


def test_a_regrade_item_whose_worker_died_is_graded_again_and_the_regrade_applies(regrade, run_queue):
    item = regrade.items.get()
    worker_dies_holding(RegradeItem, item.pk)
    assert sweep() == {"grader.RegradeItem": (1, 0)}
    with mock.patch("grader.regrade.grade", side_effect=passes):
        run_queue()
    item.refresh_from_db()
    assert (item.done, item.new_verdict, item.tries) == (True, "passed", 2)
    assert regrades.summary(regrade)["complete"]
    assert regrades.apply(regrade) == 1
    assert Submission.objects.get().score == 1.0


def test_a_regrade_item_given_up_blocks_applying_until_resumed(regrade, run_queue, settings):
    settings.GRADING_MAX_TRIES = 1
    item = regrade.items.get()
    worker_dies_holding(RegradeItem, item.pk)
    assert sweep() == {"grader.RegradeItem": (0, 1)}
    item.refresh_from_db()
    assert item.status == "failed" and not regrades.summary(regrade)["complete"]
    with pytest.raises(regrades.NotReady):
        regrades.apply(regrade)
    assert Submission.objects.get().score == 0.0  # the old grade stands
    assert regrades.resume(regrade) == 1
    with mock.patch("grader.regrade.grade", side_effect=passes):
        run_queue()
    assert regrades.apply(regrade) == 1
    assert Submission.objects.get().score == 1.0


def test_a_regrade_cancelled_while_queued_leaves_the_queue(regrade, run_queue):
    regrade.status = regrade.Status.CANCELLED
    regrade.save()
    with mock.patch("grader.regrade.grade") as grade:
        run_queue()
    grade.assert_not_called()
    assert not RegradeItem.objects.pending().exists()
    later = timezone.now() + timedelta(days=1)
    assert sweep(now=later) == {}  # nothing left for the sweeper to queue again


# --- a new kind of job ---------------------------------------------------------------------


@task(queue_name="default")
def do_toy_job(job_id: int) -> str:
    toy = apps.get_model("jobs", "ToyJob")
    token = toy.objects.claim(job_id, LEASE)
    if token is None:
        return "skipped"
    return "done" if toy.objects.finish(job_id, token, note="sent") else "stale"


@pytest.fixture
def toy_job(transactional_db):
    """A job model the sweeper has never heard of (as the LTI grade outbox will be)."""

    class ToyJob(Job):
        task_path = f"{__name__}.do_toy_job"
        note = models.CharField(max_length=20, blank=True)
        created_at = models.DateTimeField(default=timezone.now)

        class Meta:
            app_label = "jobs"

        @classmethod
        def given_up_fields(cls, tries: int) -> dict:
            return {"note": f"gave up after {tries}"}

    with connection.schema_editor() as editor:
        editor.create_model(ToyJob)
    yield ToyJob
    with connection.schema_editor() as editor:
        editor.delete_model(ToyJob)
    del apps.all_models["jobs"]["toyjob"]
    apps.clear_cache()


def test_a_new_job_model_is_swept_without_changing_the_sweeper(toy_job, run_queue, settings):
    toy_job.objects.create(enqueued_at=timezone.now())  # its task never reached the queue
    lost_worker = toy_job.objects.create()
    worker_dies_holding(toy_job, lost_worker.pk)
    later = timezone.now() + timedelta(seconds=settings.GRADING_REQUEUE_AFTER + 1)
    assert sweep(now=later) == {"jobs.ToyJob": (2, 0)}
    assert DBTaskResult.objects.filter(task_path=f"{__name__}.do_toy_job").count() == 2
    run_queue()
    assert list(toy_job.objects.order_by("pk").values_list("status", "note", "tries")) == [
        ("done", "sent", 1),
        ("done", "sent", 2),
    ]


def test_a_new_job_model_is_given_up_on_with_its_own_fields(toy_job, settings):
    settings.GRADING_MAX_TRIES = 1
    job = toy_job.objects.create()
    worker_dies_holding(toy_job, job.pk)
    assert sweep() == {"jobs.ToyJob": (0, 1)}
    job.refresh_from_db()
    assert (job.status, job.note, job.is_pending) == ("failed", "gave up after 1", False)


# --- a worker its supervisor saw die -------------------------------------------------------


@pytest.fixture
def holder():
    """Claims made in this test carry the name of the worker ``holder(name)`` says we are."""
    from jobs import queue

    yield queue.hold_leases_as
    queue.hold_leases_as("")


def test_a_dead_workers_jobs_go_back_at_once_and_a_live_workers_stay_its(toy_job, holder, run_queue):
    dead, alive = toy_job.objects.create(), toy_job.objects.create()
    holder("w1-5d1e")
    assert toy_job.objects.claim(dead.pk, LEASE) is not None
    # A live worker whose id begins with the dead one's (the ids are random: it can happen).
    holder("w1-5d1e2")
    live_token = toy_job.objects.claim(alive.pk, LEASE)
    assert live_token is not None
    # Nothing has expired: only the supervisor's word that w1-5d1e died gives its job back.
    assert sweep() == {}
    assert release("w1-5d1e") == {"jobs.ToyJob": (1, 0)}
    dead.refresh_from_db()
    assert (dead.status, dead.tries, dead.lease_token) == ("queued", 1, "")
    assert "worker died" in dead.last_error
    alive.refresh_from_db()
    assert (alive.status, alive.lease_token) == ("running", live_token)
    assert release("w1-5d1e") == {}  # nothing held by it any more
    run_queue()  # the dead worker's job is done by the next worker; the live one's stays its
    assert list(toy_job.objects.order_by("pk").values_list("status", "tries")) == [
        ("done", 2),
        ("running", 1),
    ]
    assert toy_job.objects.finish(alive.pk, live_token, note="late but valid")


def test_a_job_whose_workers_keep_dying_is_given_up_when_released(toy_job, holder, settings):
    settings.GRADING_MAX_TRIES = 2
    job = toy_job.objects.create()
    for attempt, outcome in ((1, (1, 0)), (2, (0, 1))):
        holder(f"w1-{attempt}")
        assert toy_job.objects.claim(job.pk, LEASE) is not None
        assert release(f"w1-{attempt}") == {"jobs.ToyJob": outcome}
    job.refresh_from_db()
    assert (job.status, job.note, job.tries) == ("failed", "gave up after 2", 2)


def test_a_worker_id_too_long_for_a_token_is_still_released(toy_job, holder):
    job = toy_job.objects.create()
    worker = "a worker id with spaces and more than forty characters in it"
    holder(worker)
    token = toy_job.objects.claim(job.pk, LEASE)
    assert token is not None and len(token) <= 64
    assert release(worker) == {"jobs.ToyJob": (1, 0)}


def test_taking_a_job_reads_it_claims_it_once_and_leaves_others_alone(toy_job):
    # A task body takes its job: the row as it reads it, under the lease the row asks for; a
    # second worker (or a late duplicate of the task) gets nothing, nor does a finished job.
    job = toy_job.objects.create(note="first")
    leases: list[str] = []

    def lease(row):
        leases.append(row.note)
        return timedelta(minutes=7)

    taken = toy_job.objects.only("pk", "status", "note").take(job.pk, lease)
    assert taken is not None
    row, token = taken
    assert (row.pk, row.note, leases) == (job.pk, "first", ["first"])
    stored = toy_job.objects.get(pk=job.pk)
    assert stored.status == "running" and stored.lease_token == token and stored.tries == 1
    assert timedelta(minutes=6) < stored.lease_expires_at - timezone.now() <= timedelta(minutes=7)
    assert toy_job.objects.take(job.pk, lease) is None  # already running
    assert toy_job.objects.finish(job.pk, token)
    assert toy_job.objects.take(job.pk, lease) is None  # done
    assert toy_job.objects.take(job.pk + 1000, lease) is None  # gone
    assert leases == ["first"]
