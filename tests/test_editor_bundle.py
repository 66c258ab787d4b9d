"""The code editor's bundle is optional (npm builds it): without it, lesson pages still open in
production with their plain text area, and `manage.py check` says what is missing."""

import re
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from courses.checks import editor_bundle_built
from courses.importer import import_course
from courses.models import Course

pytestmark = pytest.mark.django_db

STATIC = Path(__file__).resolve().parent.parent / "static"
LAB = Path(__file__).parent / "fixtures" / "lab"
MANIFEST = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
}


@pytest.fixture
def static_without_bundle(settings, tmp_path):
    """The site's static files as on a server where npm was missing: no build/ folder."""
    source = tmp_path / "static"
    shutil.copytree(STATIC, source, ignore=shutil.ignore_patterns("build"))
    settings.STATICFILES_DIRS = [source]
    settings.STATIC_ROOT = tmp_path / "collected"
    return settings


@pytest.fixture
def static_with_bundle(static_without_bundle):
    built = Path(static_without_bundle.STATICFILES_DIRS[0]) / "build"
    built.mkdir()
    (built / "editor.js").write_text("// the bundle\n")
    return static_without_bundle


@pytest.fixture
def student(client, alice):
    import_course(LAB)  # no grading data: the page is all this needs
    Course.objects.get(slug="lab").enroll(alice)
    client.force_login(alice)
    return client


def test_a_lesson_opens_in_production_without_the_bundle_with_its_plain_text_area(
    static_without_bundle, student
):
    static_without_bundle.STORAGES = MANIFEST
    call_command("collectstatic", interactive=False, verbosity=0)

    response = student.get(reverse("lesson", args=["lab", "lab"]))
    assert response.status_code == 200
    page = response.content.decode()
    assert '<label for="code-attn" class="code-label">Kodunuz (NumPy ile Python)</label>' in page
    assert '<textarea id="code-attn" name="code"' in page
    assert "editor.js" not in page and "editor.css" not in page
    assert "/static/js/selftest." in page  # the other scripts, from the manifest


def test_a_lesson_with_the_bundle_loads_the_editor(static_with_bundle, student):
    static_with_bundle.STORAGES = MANIFEST
    call_command("collectstatic", interactive=False, verbosity=0)

    page = student.get(reverse("lesson", args=["lab", "lab"])).content.decode()
    assert re.search(r'<script src="/static/build/editor\.[0-9a-f]{12}\.js" nonce="[^"]+" defer>', page)
    assert re.search(r'<link rel="stylesheet" href="/static/css/editor\.[0-9a-f]{12}\.css">', page)


def test_in_development_the_bundle_is_served_from_the_source_folder(static_with_bundle, student):
    page = student.get(reverse("lesson", args=["lab", "lab"])).content.decode()
    assert '<script src="/static/build/editor.js" nonce="' in page


def test_check_warns_when_the_bundle_was_not_built(static_without_bundle):
    warnings = editor_bundle_built(None)
    assert [w.id for w in warnings] == ["courses.W001"]
    assert "static/build/editor.js" in warnings[0].msg and "npm" in warnings[0].hint


def test_check_warns_when_collectstatic_ran_before_the_bundle_was_built(static_without_bundle):
    static_without_bundle.STORAGES = MANIFEST
    call_command("collectstatic", interactive=False, verbosity=0)
    built = Path(static_without_bundle.STATICFILES_DIRS[0]) / "build"
    built.mkdir()
    (built / "editor.js").write_text("// built after collectstatic\n")

    warnings = editor_bundle_built(None)
    assert [w.id for w in warnings] == ["courses.W001"]
    assert warnings[0].msg.startswith("collectstatic ran before")


def test_check_is_quiet_when_the_bundle_is_there(static_with_bundle):
    assert editor_bundle_built(None) == []
    static_with_bundle.STORAGES = MANIFEST
    call_command("collectstatic", interactive=False, verbosity=0)
    assert editor_bundle_built(None) == []
