"""A status poll that waits a moment for its verdict, so the page shows it as soon as it is in.

The page asks with ``?wait=1``. The status view then holds the request while the job is
queued or running, for at most STATUS_WAIT_MS, looking at the job's status every
CHECK_SECONDS with one small query (in autocommit: no transaction stays open while it
sleeps), and answers the moment the job is done. Without ``wait=1``, or with
STATUS_WAIT_MS = 0, it answers at once as before; the JSON is the same either way.

What a held request costs: one of the web server's threads while it sleeps (``manage.py
serve`` runs 2 gunicorn processes × 4 threads) and one query per check. So each process
holds at most HOLD_SLOTS requests at once, and never one for a job the grader expects to
finish only after the wait; any other poll is answered at once and the page asks again on
its own timer (the status JSON's ``poll_after_ms``, else its back-off).
"""

import threading
from collections.abc import Callable, Iterable
from time import monotonic, sleep
from typing import Protocol

from django.conf import settings
from django.http import HttpRequest, HttpResponse

CHECK_SECONDS = 0.03  # between two looks at the job's status while holding
HOLD_SLOTS = 2  # held requests at once per web process: half of serve's 4 threads
WAITED_HEADER = "Dikkat-Waited"  # on a reply that was held: a page may ask again at once

_slots = threading.BoundedSemaphore(HOLD_SLOTS)


class Job(Protocol):
    """A queued piece of grading work as stored: an exercise submission or a queued answer."""

    @property
    def is_pending(self) -> bool: ...

    def refresh_from_db(self, using: str | None = None, fields: Iterable[str] | None = None) -> None: ...


def hold_until_done(
    request: HttpRequest, job: Job, expected_ms: Callable[[], int | None] | None = None
) -> bool:
    """For a status poll that asked to wait (``?wait=1``): return once ``job`` is no longer
    pending, or after STATUS_WAIT_MS. Returns at once, False, when the page did not ask, the
    job is done, ``expected_ms()`` (when the grader expects the verdict) is beyond the wait,
    or this process holds enough requests already. True if it held: re-read the job then."""
    budget = settings.STATUS_WAIT_MS / 1000
    if request.GET.get("wait") != "1" or budget <= 0 or not job.is_pending:
        return False
    if expected_ms is not None and (expected := expected_ms()) is not None and expected > budget * 1000:
        return False

    def pending() -> bool:
        job.refresh_from_db(fields=["status"])
        return job.is_pending

    return hold_while(pending, budget)


def waited[R: HttpResponse](response: R, held: bool) -> R:
    """``response``, marked (WAITED_HEADER) if the request was held: a job still pending after
    the whole wait may be asked about again at once. A reply not held says nothing, and the
    page waits before it asks again, so a slow server is not polled faster."""
    if held:
        response[WAITED_HEADER] = "1"
    return response


def hold_while(pending: Callable[[], bool], budget: float) -> bool:
    """Return once ``pending()`` is false or ``budget`` seconds have passed; at once (False)
    when this process already holds HOLD_SLOTS requests. True if it held."""
    if not _slots.acquire(blocking=False):
        return False
    try:
        deadline = monotonic() + budget
        while pending():
            left = deadline - monotonic()
            if left <= 0:
                break
            sleep(min(CHECK_SECONDS, left))
    finally:
        _slots.release()
    return True
