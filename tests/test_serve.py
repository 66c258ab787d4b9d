"""`manage.py serve` (what `make run` starts): its port, and refusing to start an unsafe grader."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from courses.management.commands.serve import Command
from grader.core import cgroups
from grader.core import sandbox as sb


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
