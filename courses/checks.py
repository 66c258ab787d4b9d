from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.checks import Tags, Warning, register

from .templatetags.optional_static import EDITOR_BUNDLE


@register(Tags.staticfiles)
def editor_bundle_built(app_configs, **kwargs) -> list:
    """Without the editor's bundle, exercise pages work but show a plain text area."""
    if finders.find(EDITOR_BUNDLE) is None:
        problem = "The code editor's bundle (static/build/editor.js) has not been built"
    elif (
        isinstance(staticfiles_storage, ManifestFilesMixin)
        and staticfiles_storage.hashed_files
        and EDITOR_BUNDLE not in staticfiles_storage.hashed_files
    ):
        problem = "collectstatic ran before the code editor's bundle (static/build/editor.js) was built"
    else:
        return []
    return [
        Warning(
            f"{problem}: exercise pages show a plain text area instead of the code editor.",
            hint="Install Node.js 18 or newer and run scripts/setup.sh (npm ci, npm run build), "
            "then manage.py collectstatic.",
            id="courses.W001",
        )
    ]
