import os
import re
import shutil
from pathlib import Path

import pytest
from dikkat_support import worker_env

FIXTURES = Path(__file__).parent / "fixtures"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

# Playwright's sync API runs an event loop in the test thread; the Django ORM calls that the
# tests make around it are still synchronous, so allow them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def mini_course_dir(tmp_path) -> Path:
    """A writable copy of the small fixture course, for tests that edit course files."""
    target = tmp_path / "mini"
    shutil.copytree(FIXTURES / "mini", target)
    return target


@pytest.fixture
def mini_course(db, mini_course_dir):
    from courses.importer import import_course
    from courses.models import Course

    import_course(mini_course_dir)
    return Course.objects.get(slug="mini")


@pytest.fixture
def make_user(db):
    from django.contrib.auth.models import User

    def make(username: str, password: str = "a-Long-passw0rd", **extra):
        return User.objects.create_user(
            username=username, password=password, email=f"{username}@example.com", **extra
        )

    return make


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Keep each phase's report on the item so fixtures can see whether the test failed.
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


# --- Browser tests: Playwright driving Debian's chromium ------------------------------------


@pytest.fixture(scope="module")
def browser():
    # Module scope: chromium and Playwright's driver end with the browser test modules, so
    # the grader's tests (which check that no stray child process exists) start clean.
    from playwright.sync_api import sync_playwright

    if not Path("/usr/bin/chromium").exists():
        pytest.fail("chromium is missing: run `make setup` as root or `apt-get install chromium`")
    with sync_playwright() as playwright:
        # launch() gives every run a fresh, temporary user-data dir.
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "console_allows(*patterns): console messages (regular expressions) a browser test expects, "
        "e.g. the browser's own log line for a response the test provokes on purpose",
    )


@pytest.fixture
def page(request, browser, live_server):
    """A fresh browser context (its own cookies and storage); screenshot on failure.

    Any console error or warning and any uncaught page error fails the test (at teardown),
    unless the test's console_allows marker names it: a CSP violation, a missing static file
    or a script exception is something a user's browser would show too.
    """
    context = browser.new_context(
        locale="tr-TR",
        viewport={"width": 1100, "height": 900},
        java_script_enabled=not request.node.get_closest_marker("nojs"),
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.base_url = live_server.url
    problems = console_problems(page)
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    if failed is not None and failed.passed:
        allowed = [re.compile(p) for m in request.node.iter_markers("console_allows") for p in m.args]
        unexpected = [line for line in problems if not any(p.search(line) for p in allowed)]
        assert not unexpected, "the browser console reported:\n" + "\n".join(unexpected)


def console_problems(page) -> list[str]:
    """Collect the page's console errors and warnings and its uncaught exceptions."""
    problems: list[str] = []

    def on_console(message):
        if message.type in ("error", "warning"):
            where = message.location.get("url", "")
            problems.append(f"console.{message.type}: {message.text} ({where}) on {page.url}")

    page.on("console", on_console)
    page.on(
        "pageerror", lambda error: problems.append(f"uncaught {error.name}: {error.message} on {page.url}")
    )
    return problems


@pytest.fixture
def write_code(page):
    """Replace the code in an exercise's editor as a student pasting it would."""

    def write(exercise, code: str):
        editor = exercise.get_by_role("textbox", name="Kodunuz (NumPy ile Python)")
        editor.click()
        page.keyboard.press("Control+A")
        # insert_text is one input event, like a paste: no auto-indent on each new line.
        page.keyboard.insert_text(code)
        return editor

    return write


@pytest.fixture
def quiz(db):
    return _import_with_grading("quiz")


@pytest.fixture
def quiz_live(transactional_db):
    """The quiz course for browser tests (committed, so the live server sees it)."""
    return _import_with_grading("quiz")


def _import_with_grading(slug: str):
    from courses.exercises import check_exercises
    from courses.importer import import_course
    from courses.models import Course

    import_course(FIXTURES / slug, prepare_exercises=lambda source: check_exercises(source, build=True))
    return Course.objects.get(slug=slug)


@pytest.fixture
def lab(db):
    """The fixture course with code exercises, imported with its hidden grading data built."""
    return _import_with_grading("lab")


@pytest.fixture
def lab_live(transactional_db):
    return _import_with_grading("lab")


@pytest.fixture
def grading_worker(transactional_db):
    """A real grading worker process on the test database, stopped after the test."""
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    env = worker_env()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "grading_worker", "--no-startup-delay", "--interval", "0.2"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(ARTIFACTS.parent / "var" / "worker-test.log", "ab"),
        start_new_session=True,
    )
    yield process
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.fixture
def logged_in(page, make_user):
    """Log a new enrolled student in through the real login form; returns a function."""

    def login(course, username="ogrenci", password="Gizli-parola-2026"):
        user = make_user(username, password=password)
        course.enroll(user)
        page.goto(page.base_url + "/accounts/login/")
        page.locator("#id_username").fill(username)
        page.locator("#id_password").fill(password)
        page.locator("main form button[type=submit]").click()
        page.wait_for_url(page.base_url + "/panom/")  # an enrolled student lands on İlerlemem
        return user

    return login


@pytest.fixture
def run_queue():
    """Run every queued grading task through django-tasks-db's real worker, then return."""
    from django.core.management import call_command

    def run():
        call_command("db_worker", batch=True, no_startup_delay=True, interval=0, verbosity=0)

    return run


@pytest.fixture(autouse=True)
def _fresh_grading_pace():
    """Each process keeps its estimate of the grading pace for two seconds; tests start afresh."""
    from grader.models import forget_grading_pace

    forget_grading_pace()
    yield
    forget_grading_pace()


# --- people shared by the page tests (a module may define its own instead) ------------------


@pytest.fixture
def teacher(make_user, lab, quiz):
    user = make_user("hoca")
    lab.instructors.add(user)
    quiz.instructors.add(user)
    return user


@pytest.fixture
def student(client, alice, quiz):
    """A client logged in as alice, enrolled in the quiz fixture course."""
    quiz.enroll(alice)
    client.force_login(alice)
    return client
