"""Fixtures for the grader tests: the fixture exercises are built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from grader_testkit import Exercise, HostGuard, load_exercise

from grader.core import sandbox_problem


def pytest_addoption(parser):
    parser.addoption(
        "--layer-off",
        action="append",
        default=[],
        metavar="LAYER",
        help="switch off one protection layer of the sandbox for the whole run (make test-layers)",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "fresh_sandbox: the test is about starting a fresh sandbox itself (it breaks bwrap's start): "
        "it runs without the grading zygote even when GRADER_ZYGOTE=1",
    )
    names = config.getoption("--layer-off", default=[])
    if names:
        from grader.core import sandbox

        # Entered for the life of this pytest process only; no setting can reach it.
        config._layers_off = sandbox.layers_off(*names)
        config._layers_off.__enter__()


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("sandbox") for item in items):
        return
    problem = sandbox_problem()
    if problem:
        skip = pytest.mark.skip(reason=f"sandbox unavailable: {problem}")
        for item in items:
            if item.get_closest_marker("sandbox"):
                item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    from grader.core import zygote

    if zygote.enabled_in_env():
        terminalreporter.write_line(
            f"grading zygote: {zygote.totals['children']} jobs ran in its children, "
            f"{zygote.totals['fallbacks']} fell back to a fresh sandbox (zygote not ready, failed or "
            "due; jobs with a layer switched off and fresh_sandbox tests are not counted)"
        )


@pytest.fixture(scope="session", autouse=True)
def grading_zygote():
    """GRADER_ZYGOTE=1 runs the whole suite with the grading zygote on (grader/core/zygote.py):
    every job the tests grade then runs in a child of the zygote (a fresh sandbox only when a
    test switches a layer off or the zygote failed), the tests themselves unchanged.
    `make test-zygote` does this."""
    from grader.core import zygote

    if not zygote.enabled_in_env():
        yield None
        return
    manager = zygote.enable_zygote()
    assert manager.wait_ready(60), "the grading zygote did not start"
    yield manager
    zygote.disable_zygote()


@pytest.fixture(autouse=True)
def _fresh_sandbox_only(request, grading_zygote):
    """A test marked fresh_sandbox runs with the zygote off; the next test gets it back (at its
    set-up: the marked test's monkeypatches are undone by then)."""
    if grading_zygote is None:
        yield
        return
    from grader.core import zygote

    if request.node.get_closest_marker("fresh_sandbox"):
        zygote.disable_zygote()
    elif zygote.manager() is None:
        assert zygote.enable_zygote().wait_ready(60)
    yield


@pytest.fixture(scope="session")
def attention(tmp_path_factory) -> Exercise:
    return load_exercise(tmp_path_factory.mktemp("ex"), "attention")


@pytest.fixture(scope="session")
def script_exercise(tmp_path_factory) -> Exercise:
    return load_exercise(tmp_path_factory.mktemp("ex"), "softmax_script")


@pytest.fixture(scope="session")
def strict(attention) -> Exercise:
    """The attention exercise with tight limits so that limit tests finish fast."""
    return attention.with_limits(cpu_seconds=1, wall_seconds=2, memory_mb=256)


@pytest.fixture
def host(attention):
    import numpy

    guard = HostGuard([attention.dir, Path(numpy.__file__).parent])
    yield guard
    guard.close()
