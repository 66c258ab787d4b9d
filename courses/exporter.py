"""A course's files: kept byte for byte at import, written back by the export.

The files stay the source of truth. An import keeps every file it was given (SourceFile);
``export_course`` gives them back, so an export is the folder that was imported, exactly, and
importing it again changes nothing. Rows can still be edited after an import (the admin,
later the browser): ``content_digests`` fingerprints what the database holds, the import
stores it, and the next import from a folder sees what was edited since and refuses to
overwrite it unless forced (courses.importer).
"""

import hashlib
import io
import json
import zipfile
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import models

from assessments.models import Assessment

from .models import Course, Exercise, Lesson, Question, SourceFile

# A course is a few hundred small text files; these caps keep a zip upload (and a stray big
# file in a folder) from filling the database.
MAX_FILES = 1000
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
# The only kinds of file a course folder holds (docs/authoring.md).
FILE_SUFFIXES = (".toml", ".md", ".py", ".txt", ".json", ".csv")


class CourseFilesError(Exception):
    """A folder or zip that cannot be a course's files (too many, too big, a bad name)."""


def skipped(relative: PurePosixPath) -> bool:
    # Python's caches and hidden files (.git, .DS_Store) are not part of a course.
    return any(part == "__pycache__" or part.startswith(".") for part in relative.parts)


def read_folder(root: Path) -> dict[str, bytes]:
    """Every file of a course folder by its "/"-separated path, in path order. Symbolic links
    are left out (a link could bring in a file from outside the course)."""
    root = Path(root)
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(root.rglob("*")):
        relative = PurePosixPath(path.relative_to(root).as_posix())
        # rglob does not walk into linked folders; a linked file is left out here.
        if skipped(relative) or path.is_symlink() or not path.is_file():
            continue
        size = path.stat().st_size
        total += size
        check_limits(str(relative), size, len(files) + 1, total)
        files[str(relative)] = path.read_bytes()
    return files


def check_limits(name: str, size: int, count: int, total: int) -> None:
    if size > MAX_FILE_BYTES:
        raise CourseFilesError(f"{name} is {size} bytes; a course file may have at most {MAX_FILE_BYTES}")
    if count > MAX_FILES:
        raise CourseFilesError(f"more than {MAX_FILES} files; a course has at most {MAX_FILES}")
    if total > MAX_TOTAL_BYTES:
        raise CourseFilesError(
            f"the files are over {MAX_TOTAL_BYTES} bytes in all, the most a course may have"
        )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_files(course: Course, files: dict[str, bytes]) -> None:
    """Make ``files`` the course's stored files: changed ones rewritten, gone ones removed."""
    stored = dict(course.source_files.values_list("path", "sha256"))
    course.source_files.exclude(path__in=list(files)).delete()
    for path, data in files.items():
        digest = sha256(data)
        if stored.get(path) == digest:
            continue
        SourceFile.objects.update_or_create(
            course=course, path=path, defaults={"data": data, "sha256": digest}
        )


def export_course(course: Course) -> dict[str, bytes]:
    """The course's files by path, byte for byte as its last import read them."""
    return {
        path: bytes(data) for path, data in course.source_files.order_by("path").values_list("path", "data")
    }


def folder_name(course: Course) -> str:
    """The name of the folder the course was imported from (its slug if unknown): the rows
    name their files under it (source_file), so an export must keep it to import as no change."""
    name = PurePosixPath(course.source_path.replace("\\", "/")).name
    return name if name and not name.startswith(".") else course.slug


def write_folder(files: dict[str, bytes], directory: Path) -> None:
    directory = Path(directory)
    for path, data in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def zip_bytes(files: dict[str, bytes], folder: str) -> bytes:
    """A zip of ``files`` inside one top folder (the course's slug), as a course folder unpacks.
    Fixed times, so the same files make the same zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(f"{folder}/{path}", date_time=(2000, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


# -- what the database holds ------------------------------------------------------------------

# Not content: bookkeeping the import or Django writes, and where the course came from.
_NOT_CONTENT = {"id", "course", "updated_at", "created_at", "imported_at", "imported_digests", "source_path"}
_ROWS: tuple[tuple[str, type[Lesson | Question | Exercise | Assessment]], ...] = (
    ("lesson", Lesson),
    ("question", Question),
    ("exercise", Exercise),
    ("assessment", Assessment),
)


def _row_digest(obj: models.Model) -> str:
    values = {
        field.attname: field.value_from_object(obj)
        for field in obj._meta.concrete_fields
        if field.name not in _NOT_CONTENT
    }
    text = json.dumps(values, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def content_digests(course: Course) -> dict[str, str]:
    """A short digest of every row the import writes ("question <slug>") and of every stored
    file ("file <path>"): what the last import left, to compare with later."""
    course = Course.objects.get(pk=course.pk)
    digests = {f"course {course.slug}": _row_digest(course)}
    for what, model in _ROWS:
        for obj in model._default_manager.filter(course=course).order_by("slug"):
            digests[f"{what} {obj.slug}"] = _row_digest(obj)
    for path, digest in course.source_files.values_list("path", "sha256"):
        digests[f"file {path}"] = digest[:16]
    return digests


def uploads_dir() -> Path:
    """Where uploaded courses and the authoring area's publishes are unpacked (courses.uploads)."""
    return Path(settings.VAR_DIR) / "course-uploads"


def is_upload(folder: Path) -> bool:
    """Whether ``folder`` is an unpacked upload or publish, not a course folder of the instructors' own."""
    return Path(folder).resolve().parent.parent == uploads_dir().resolve()


def browser_files_overwritten(course: Course, files: dict[str, bytes], root: Path) -> list[tuple[str, str]]:
    """(path, "overwrite"/"remove") of each file of ``course`` that an import of ``files`` from
    the folder ``root`` would change, when the course's files came last from the browser (a
    publish of the authoring area or a zip upload) and ``root`` is another folder of one's
    own: those are edits made in the browser since the folder was imported, and the folder
    does not have them. A file the folder adds is no loss."""
    if not course.source_path or not is_upload(Path(course.source_path)) or is_upload(root):
        return []
    stored = {path: bytes(data) for path, data in course.source_files.values_list("path", "data")}
    return [
        (path, "overwrite" if path in files else "remove")
        for path in sorted(stored)
        if files.get(path) != stored[path]
    ]


def edited_since_import(course: Course) -> list[str]:
    """The rows and files (keys of ``content_digests``) that differ from what the last import
    left: edited, added or removed since. Empty for a course imported before digests were kept."""
    before = course.imported_digests
    if not before:
        return []
    now = content_digests(course)
    return sorted(key for key in before.keys() | now.keys() if before.get(key) != now.get(key))
