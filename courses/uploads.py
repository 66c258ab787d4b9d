"""A course folder uploaded as a zip: checked entry by entry, unpacked where the course's
files live on the server, and imported by a worker as ``import_course`` would.

An import runs reference solutions and generators in the sandbox, which never happens in a
web request (see courses.reimport): the page checks the zip and the course files (fast, no
sandbox), queues the import and shows its outcome from the queue's own row.
"""

import shutil
import tomllib
import uuid
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.tasks import task
from django.utils.translation import gettext as _

from .authoring import PATH_NAME, CourseSource, load_course
from .exercises import check_exercises
from .exporter import FILE_SUFFIXES, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, skipped
from .importer import ImportRefused, import_course
from .models import Course

MAX_ZIP_BYTES = MAX_TOTAL_BYTES
_SYMLINK = 0o120000


class UploadRefused(Exception):
    """The zip cannot be a course folder; the message (translated) says why and what to do."""


def read_zip(upload) -> tuple[str, dict[str, bytes]]:
    """The course folder's name and its files from a zip holding one folder with course.toml
    (as the export makes it). Never trusts the zip: names, sizes and kinds are checked, and
    no entry is read past the size a course file may have."""
    try:
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError):
        raise UploadRefused(
            _("This file is not a zip archive. Upload the course folder as a .zip file.")
        ) from None
    files: dict[str, bytes] = {}
    total = 0
    with archive:
        for info in archive.infolist():
            name = info.filename
            path = PurePosixPath(name)
            if "\\" in name or path.is_absolute() or ":" in name or ".." in path.parts:
                raise UploadRefused(
                    _("%(name)s: a path in the zip must stay inside the course folder.") % {"name": name}
                )
            if info.is_dir() or skipped(path) or path.parts[0] == "__MACOSX":
                continue
            if (info.external_attr >> 16) & 0o170000 == _SYMLINK:
                raise UploadRefused(
                    _("%(name)s is a symbolic link; the zip may hold only files.") % {"name": name}
                )
            if info.flag_bits & 0x1:
                raise UploadRefused(
                    _("%(name)s is encrypted; upload a zip without a password.") % {"name": name}
                )
            if path.suffix not in FILE_SUFFIXES:
                raise UploadRefused(
                    _("%(name)s: a course holds only %(suffixes)s files.")
                    % {"name": name, "suffixes": ", ".join(FILE_SUFFIXES)}
                )
            if len(files) >= MAX_FILES:
                raise UploadRefused(
                    _("The zip holds more than %(n)s files, the most a course may have.") % {"n": MAX_FILES}
                )
            try:
                with archive.open(info) as entry:
                    data = entry.read(MAX_FILE_BYTES + 1)
            except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, OSError):
                raise UploadRefused(
                    _("%(name)s cannot be read from the zip; make the zip again and upload it.")
                    % {"name": name}
                ) from None
            total += len(data)
            if len(data) > MAX_FILE_BYTES or total > MAX_TOTAL_BYTES:
                raise UploadRefused(
                    _(
                        "%(name)s makes the course too big: at most %(file)s MB a file and %(total)s MB in all."
                    )
                    % {"name": name, "file": MAX_FILE_BYTES // 2**20, "total": MAX_TOTAL_BYTES // 2**20}
                )
            if str(path) in files:
                raise UploadRefused(_("%(name)s is in the zip twice.") % {"name": name})
            files[str(path)] = data
    tops = {PurePosixPath(name).parts[0] for name in files}
    folder = next(iter(tops)) if len(tops) == 1 else ""
    if not folder or f"{folder}/course.toml" not in files:
        raise UploadRefused(
            _(
                "The zip must hold one course folder with course.toml in it, as the course export makes it: "
                "zip the folder itself, not the files inside it."
            )
        )
    if not PATH_NAME.match(folder):
        raise UploadRefused(
            _(
                "The folder name %(name)s must be lowercase letters and digits joined by hyphens or underscores."
            )
            % {"name": folder}
        )
    return folder, {name.removeprefix(f"{folder}/"): data for name, data in files.items()}


def unpack(folder: str, files: dict[str, bytes]) -> Path:
    """Write the files where uploaded courses live (a new place for each upload: the course's
    folder on the server, which later re-imports and item checks read)."""
    root = Path(settings.VAR_DIR) / "course-uploads" / uuid.uuid4().hex / folder
    for name, data in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def discard(root: Path) -> None:
    shutil.rmtree(root.parent, ignore_errors=True)


def check(root: Path) -> CourseSource:
    """The course's own checks that need no sandbox (those run in the import)."""
    return load_course(root)


@task(queue_name="default", priority=-50)
def import_upload(path: str, force: bool, user_id: int | None) -> dict:
    """Import an unpacked upload as ``import_course`` does (``user_id``: who may see the outcome)."""
    earlier = _earlier_upload(Path(path))
    try:
        report = import_course(
            path, prepare_exercises=lambda source: check_exercises(source, build=True), force=force
        )
    except ImportRefused as refused:
        discard(Path(path))  # nothing points to it: the import changed nothing
        return {"imported": False, "problems": [str(problem) for problem in refused.problems]}
    if earlier is not None:
        discard(earlier)  # the course's folder is the new upload now
    return {"imported": True, "course": report.course, "changes": report.changes}


def _earlier_upload(root: Path) -> Path | None:
    """The folder of the course's earlier upload, which the import of ``root`` replaces."""
    try:
        slug = tomllib.loads((root / "course.toml").read_text(encoding="utf-8")).get("slug")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    old = Course.objects.filter(slug=slug).values_list("source_path", flat=True).first()
    uploads = (Path(settings.VAR_DIR) / "course-uploads").resolve()
    if not old or Path(old).resolve().parent.parent != uploads or Path(old).resolve() == root.resolve():
        return None
    return Path(old)
