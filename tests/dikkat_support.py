"""Helpers shared by the tests (imported by conftest.py and test modules)."""

import os


def worker_env(**extra) -> dict:
    """Environment for a worker process that must use the tests' database."""
    from django.db import connection

    settings = connection.settings_dict
    env = {**os.environ, **extra}
    if connection.vendor == "sqlite":
        env["DIKKAT_SQLITE"] = str(settings["NAME"])
    else:
        env["DATABASE_URL"] = (
            f"postgres://{settings['USER']}:{settings['PASSWORD'] or ''}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
        )
    return env
