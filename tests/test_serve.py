"""`manage.py serve` (what `make run` starts): its port, and refusing to start an unsafe grader."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from courses.management.commands.serve import Command
from grader.core import cgroups
from grader.core import sandbox as sb

ROOT = Path(__file__).resolve().parent.parent


def test_port_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("PORT", "8001")
    options = Command().create_parser("manage.py", "serve").parse_args([])
    assert options.bind == "127.0.0.1:8001"


@pytest.mark.sandbox
def test_serve_refuses_to_start_workers_that_could_not_cap_a_run(monkeypatch):
    monkeypatch.setattr(cgroups, "discover", lambda: None)
    monkeypatch.delenv(sb.ALLOW_UNCAPPED_VAR, raising=False)
    sb.reset_environment()
    try:
        with pytest.raises(CommandError, match="Grading cannot run safely"):
            call_command("serve", "--workers", "1")
    finally:
        sb.reset_environment()


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue  # it ended meanwhile
    return found


def test_ctrl_c_stops_the_web_server_and_leaves_nothing_on_the_port(tmp_path):
    """Ctrl-C in the terminal of `make run`: every process serve started is gone and the port is free."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bind = f"127.0.0.1:{port}"
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--workers", "0", "--bind", bind],
        cwd=ROOT,
        env={**os.environ, "DIKKAT_VAR_DIR": str(tmp_path)},
        start_new_session=True,  # the terminal's foreground group, which Ctrl-C signals
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://{bind}/", timeout=5)
                break
            except urllib.error.HTTPError:
                break  # it answered
            except OSError:
                assert time.monotonic() < deadline, "serve never answered"
                time.sleep(0.3)
        assert len(_processes_mentioning(bind)) >= 3  # serve, gunicorn's master and its workers
        os.killpg(serve.pid, signal.SIGINT)
        assert serve.wait(timeout=30) == 0
        assert _processes_mentioning(bind) == []
        with socket.socket() as again:
            # As a server binds (gunicorn too): a closed connection's TIME_WAIT is no listener.
            again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            again.bind(("127.0.0.1", port))
            again.listen()  # nothing else listens on it
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
