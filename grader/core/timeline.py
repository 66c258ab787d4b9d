"""Time stamps of a grade's stages, for ``python -m grader.bench --breakdown`` only.

Off unless a caller records (`recording`): then the host's stages (grade.py, sandbox.py,
zygote.py) are stamped here, and the sandbox's own stamps (the zygote's child, its init and
runner, or a fresh sandbox's runner: runner.py writes them to ``/out/trace.json`` when the
job asks for it) are added after the run as untrusted numbers.  All are CLOCK_MONOTONIC
times, which the host and every sandbox share (no sandbox has a time namespace).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator

Stamp = tuple[str, float]

# A sandbox's trace file: at most this many bytes are read, and this many stamps kept.
UNTRUSTED_BYTES = 64 * 1024
UNTRUSTED_STAMPS = 500

_stamps: list[Stamp] | None = None
_owner: int | None = None  # the thread that records: other threads' runs are not stamped


def on() -> bool:
    """Is this thread recording?"""
    return _stamps is not None and threading.get_ident() == _owner


def stamp(name: str) -> None:
    """Note that stage ``name`` ended now (nothing when not recording)."""
    if _stamps is not None and threading.get_ident() == _owner:
        _stamps.append((name, time.monotonic()))


def add_untrusted(data: object) -> None:
    """Add a sandbox's stamps (``{"stamps": [[name, seconds], ...]}``), ignoring anything malformed."""
    if not on() or not isinstance(data, dict) or not isinstance(data.get("stamps"), list):
        return
    assert _stamps is not None
    for item in data["stamps"][:UNTRUSTED_STAMPS]:
        if (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str)
            and len(item[0]) <= 40
            and isinstance(item[1], float)
            and math.isfinite(item[1])
        ):
            _stamps.append(("sandbox:" + item[0], item[1]))


@contextlib.contextmanager
def recording() -> Iterator[list[Stamp]]:
    """Record the stamps of what this thread runs meanwhile (sorted by time at the end)."""
    global _stamps, _owner
    stamps: list[Stamp] = []
    _stamps, _owner = stamps, threading.get_ident()
    try:
        yield stamps
    finally:
        _stamps, _owner = None, None
        stamps.sort(key=lambda s: s[1])
