"""Settings: safe defaults, and `check --deploy` clean with production variables set."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PRODUCTION = {
    "SECRET_KEY": "x7!" + "k" * 20 + "Qz-9_" + "m" * 30,
    "ALLOWED_HOSTS": "dikkat.example.org",
    "SECURE_COOKIES": "1",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "STATIC_MANIFEST": "1",
    "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
    "EMAIL_HOST": "smtp.example.org",
}


def manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    clean = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_variables(tmp_path):
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", env={**PRODUCTION, "DIKKAT_VAR_DIR": str(tmp_path)}
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_variables_debug_is_off_and_a_secret_key_is_generated_untracked(tmp_path):
    script = "from django.conf import settings; print(settings.DEBUG, len(settings.SECRET_KEY))"
    result = manage("shell", "-v", "0", "-c", script, env={"DIKKAT_VAR_DIR": str(tmp_path)})
    assert result.stdout.split() == ["False", str(len((tmp_path / "secret_key").read_text().strip()))]
    assert oct((tmp_path / "secret_key").stat().st_mode & 0o777) == "0o600"
    tracked = subprocess.run(["git", "ls-files", "var"], cwd=ROOT, capture_output=True, text=True).stdout
    assert tracked == ""


def test_a_second_test_run_on_this_checkout_gets_its_own_database(db):
    """Two `make test` runs at once on one checkout must not share (or delete) one test database."""
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL runs get a throw-away server of their own (scripts/postgres.sh)")
    script = "from django.conf import settings; print(settings.DATABASES['default']['TEST']['NAME'])"
    other = manage("shell", "-v", "0", "-c", script, env={"DIKKAT_VAR_DIR": str(settings.VAR_DIR)})
    ours = connection.settings_dict["NAME"]
    assert Path(ours).parent == Path(other.stdout.strip()).parent == Path(settings.VAR_DIR)
    assert other.stdout.strip() != ours


def test_grading_workers_follow_the_cpus_the_site_may_use_not_the_machine():
    # On a machine (or container) that lets the site use one CPU of many, the default is two
    # workers, not the machine's count plus one.
    code = "from django.conf import settings; print(settings.GRADING_WORKERS)"
    env = {key: value for key, value in os.environ.items() if key != "GRADING_WORKERS"}
    one_cpu = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert one_cpu.returncode == 0, one_cpu.stderr
    assert one_cpu.stdout.split()[-1] == "2"
