"""A course folder uploaded as a zip: checked entry by entry, unpacked where the course's
files live on the server, and imported by a worker as ``import_course`` would.

An import runs reference solutions and generators in the sandbox, which never happens in a
web request: the page checks the zip and the course files (fast, no sandbox), queues the
import and shows its outcome from the queue's own row.

Every import of a course through the queue (an upload, the admin's re-import, a publish from
the authoring area) goes through ``import_folder``: it holds the course's lock (a file lock in
the var dir, so two workers never import one course at once), imports, and only then removes
the course's earlier upload folder, never the one the course now reads.
"""

import fcntl
import hashlib
import shutil
import threading
import tomllib
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.tasks import task
from django.utils.translation import gettext as _

from .authoring import PATH_NAME, CourseSource, load_course
from .exercises import check_exercises
from .exporter import (
    FILE_SUFFIXES,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    is_upload,
    skipped,
    uploads_dir,
)
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
    for name in files:
        for parent in PurePosixPath(name).parents:
            if str(parent) in files:
                raise UploadRefused(
                    _(
                        "%(name)s is a file in the zip and %(other)s is inside a folder of the same name; "
                        "rename one of them and zip the course again."
                    )
                    % {"name": str(parent), "other": name}
                )
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
    folder on the server, which later re-imports and item checks read). They are written into
    a staging folder first and renamed into place: a write that fails leaves nothing."""
    place = uploads_dir() / uuid.uuid4().hex
    staging = place / ".staging"
    try:
        for name, data in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        staging.mkdir(parents=True, exist_ok=True)  # a course of no files is still a folder
        staging.rename(place / folder)
    except OSError:
        shutil.rmtree(place, ignore_errors=True)
        raise
    return place / folder


def discard(root: Path) -> None:
    """Remove an unpacked upload, unless a course reads its files from it."""
    if Course.objects.filter(source_path__in={str(root), str(root.resolve())}).exists():
        return
    shutil.rmtree(root.parent, ignore_errors=True)


def check(root: Path) -> CourseSource:
    """The course's own checks that need no sandbox (those run in the import)."""
    return load_course(root)


_held = threading.local()


@contextmanager
def course_lock(slug: str) -> Iterator[None]:
    """Hold the course's import lock (a file lock in the var dir, shared by every worker
    process; a thread that holds it already may take it again)."""
    held: set[str] = _held.__dict__.setdefault("slugs", set())
    if slug in held:
        yield
        return
    locks = Path(settings.VAR_DIR) / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(slug.encode()).hexdigest()[:32]
    with open(locks / f"course-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        held.add(slug)
        try:
            yield
        finally:
            held.discard(slug)
            fcntl.flock(lock, fcntl.LOCK_UN)


def slug_of(root: Path) -> str:
    """The slug course.toml names (its folder name when it cannot be read)."""
    try:
        slug = tomllib.loads((root / "course.toml").read_text(encoding="utf-8")).get("slug")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        slug = None
    return slug if isinstance(slug, str) and slug else root.name


def import_folder(root: Path, *, force: bool = False, on_synced=None) -> dict:
    """Import the course folder at ``root`` as ``import_course`` does, with the exercises'
    checks and grading data, under the course's lock. When the course then reads ``root``,
    the upload folder it read before is removed. The outcome as the status pages show it:
    {"imported": False, "problems": [...]} or {"imported": True, "course", "changes"}."""
    with course_lock(slug_of(root)):
        # Read under the lock: no other import of this course can change it meanwhile.
        earlier = Course.objects.filter(slug=slug_of(root)).values_list("source_path", flat=True).first()
        try:
            report = import_course(
                root,
                prepare_exercises=lambda source: check_exercises(source, build=True),
                force=force,
                on_synced=on_synced,
            )
        except ImportRefused as refused:
            return {"imported": False, "problems": [str(problem) for problem in refused.problems]}
        if earlier and is_upload(Path(earlier)) and Path(earlier).resolve() != root.resolve():
            discard(Path(earlier))  # the course's folder is the new one now
    return {"imported": True, "course": report.course, "changes": report.changes}


@task(queue_name="default", priority=-50)
def import_upload(path: str, force: bool, user_id: int | None) -> dict:
    """Import an unpacked upload as ``import_course`` does (``user_id``: who may see the outcome,
    and the first instructor of a course that has none). The folder is removed unless the
    course now reads it, also when the import raises."""

    def first_instructor(course: Course) -> None:
        # Staff may upload a new course: its uploader teaches it (else nobody but a superuser
        # could author it, approve its LMS links or re-upload it).
        if user_id is not None and not course.instructors.exists():
            course.instructors.add(user_id)

    try:
        return import_folder(Path(path), force=force, on_synced=first_instructor)
    finally:
        discard(Path(path))
