"""A course's working copy in the browser: draft files over its stored files, published
through the same validation and queued import as an uploaded course folder.

- The working copy is the course's SourceFiles (what the last import read) with its
  DraftFiles laid over them. Students never see a draft: only an import writes lessons and
  questions, and only a publish imports.
- ``publish`` writes the working copy into a fresh folder where uploads live, checks it with
  ``load_course`` (problems come back as file:line, and nothing is queued), then queues
  ``publish_files``, which imports it as ``courses.uploads.import_upload`` does and records
  a Revision of what changed, in the import's one transaction: all or nothing.
- The import's guard against overwriting rows edited in the database since the last import
  (the admin) stays on: the working copy is built from the files, so such an edit would be
  lost silently. The instructor sees what would be overwritten and may ask to overwrite it.
- ``revert`` makes the working copy equal to an earlier revision's files and publishes it,
  which is itself a new revision.
"""

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.db import transaction
from django.db.models import Max
from django.tasks import task
from django.utils import timezone
from django.utils.translation import gettext as _

from courses.authoring import PATH_NAME, Problem, load_course
from courses.exporter import FILE_SUFFIXES, MAX_FILE_BYTES, export_course, folder_name, sha256, skipped
from courses.models import Course
from courses.uploads import course_lock, discard, import_folder, unpack

from .impact import grading_snapshot, regrade_offers
from .models import DraftFile, ExerciseCheck, Revision, folder_digest

DRAFT = "draft"
PUBLISHED = "published"
DELETED = "deleted"  # a draft that removes the file
EXERCISE_FILE = "exercise.toml"


class DraftRefused(Exception):
    """A draft that cannot be a course file; the message (translated) says why."""


def may_author(user, course: Course) -> bool:
    """Only the course's instructors author it (and superusers). Staff status is for the admin:
    an instructor who uses the admin does not author courses they do not teach."""
    return user.is_authenticated and (user.is_superuser or course.is_instructor(user))


def working_copy(course: Course, only: str | None = None) -> dict[str, bytes]:
    """The course's files with its drafts laid over them (only those under the folder
    ``only`` when given), by path in path order."""
    files = export_course(course)
    for draft in course.draft_files.all():
        if only is not None and not draft.path.startswith(f"{only}/"):
            continue
        if draft.deleted:
            files.pop(draft.path, None)
        else:
            files[draft.path] = draft.text.encode()
    return dict(sorted(files.items()))


def file_states(course: Course) -> dict[str, str]:
    """Every path of the working copy (and each deleted one): DRAFT, PUBLISHED or DELETED."""
    states = dict.fromkeys(course.source_files.values_list("path", flat=True), PUBLISHED)
    for path, deleted in course.draft_files.values_list("path", "deleted"):
        states[path] = DELETED if deleted else DRAFT
    return dict(sorted(states.items()))


def read_text(course: Course, path: str, *, published: bool = False) -> str | None:
    """The working copy's text of ``path`` (None if the course has no such file), or the
    published text when ``published``."""
    data = (export_course(course) if published else working_copy(course)).get(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def check_path(path: str) -> str:
    """``path`` if it can name a course file; DraftRefused says why not."""
    pure = PurePosixPath(path)
    names = pure.parts
    if (
        not names
        or "\\" in path
        or pure.is_absolute()
        or skipped(pure)
        or any(not PATH_NAME.match(name) for name in [*names[:-1], pure.stem])
    ):
        raise DraftRefused(
            _(
                "%(path)s cannot be a course file: use lowercase letters, digits, hyphens and "
                "underscores, folders joined by /."
            )
            % {"path": path}
        )
    if pure.suffix not in FILE_SUFFIXES:
        raise DraftRefused(
            _("%(path)s: a course holds only %(suffixes)s files.")
            % {"path": path, "suffixes": ", ".join(FILE_SUFFIXES)}
        )
    return str(pure)


def save_draft(course: Course, path: str, text: str, user) -> DraftFile | None:
    """Keep ``text`` as the draft of ``path``; a text equal to the published file is no draft."""
    path = check_path(path)
    text = text.replace("\r\n", "\n")  # a browser's form sends CRLF; the files use LF
    if len(text.encode()) > MAX_FILE_BYTES:
        raise DraftRefused(
            _("%(path)s is too big: a course file may have at most %(mb)s MB.")
            % {"path": path, "mb": MAX_FILE_BYTES // 2**20}
        )
    published = course.source_files.filter(path=path).values_list("data", flat=True).first()
    if published is not None and bytes(published) == text.encode():
        course.draft_files.filter(path=path).delete()
        return None
    draft, _created = DraftFile.objects.update_or_create(
        course=course, path=path, defaults={"text": text, "deleted": False, "updated_by": user}
    )
    return draft


def delete_file(course: Course, path: str, user) -> None:
    """Draft the removal of ``path`` (a file only in a draft simply goes)."""
    path = check_path(path)
    if course.source_files.filter(path=path).exists():
        DraftFile.objects.update_or_create(
            course=course, path=path, defaults={"text": "", "deleted": True, "updated_by": user}
        )
    else:
        course.draft_files.filter(path=path).delete()


def discard_draft(course: Course, path: str) -> None:
    course.draft_files.filter(path=path).delete()


def exercise_folders(files: dict[str, bytes], only: str | None = None) -> list[str]:
    """The exercise folders of a working copy ("<lesson>/<exercise>"), under ``only`` if given."""
    folders = []
    for path in files:
        parts = PurePosixPath(path).parts
        if len(parts) == 3 and parts[2] == EXERCISE_FILE:
            folder = f"{parts[0]}/{parts[1]}"
            if only is None or folder.startswith(f"{only}/"):
                folders.append(folder)
    return sorted(folders)


def exercise_folder_of(files: dict[str, bytes], path: str) -> str:
    """The exercise folder holding the file ``path`` ("" when it is not in one)."""
    parts = PurePosixPath(path).parts
    folder = "/".join(parts[:2])
    return folder if len(parts) >= 3 and f"{folder}/{EXERCISE_FILE}" in files else ""


def unchecked(course: Course, only: str | None = None) -> list[str]:
    """The exercise folders whose files a draft changed and that have no passing check of
    exactly these files: a publish of them is refused."""
    files = working_copy(course)
    published = export_course(course)
    return [
        folder
        for folder in exercise_folders(files, only)
        if folder_digest(files, folder) != folder_digest(published, folder)
        and not ExerciseCheck.passing(course, folder, folder_digest(files, folder))
    ]


@dataclass
class Published:
    """What ``publish`` did: refused with problems, or queued (``result_id``)."""

    problems: list[Problem] = field(default_factory=list)
    result_id: str = ""


def course_problems(course: Course, problems: list[Problem], folder: str) -> list[Problem]:
    """Problems named by the file's path inside the course (as the editor names files)."""
    return [Problem(p.file.removeprefix(f"{folder}/"), p.line, p.message) for p in problems]


def publish(
    course: Course,
    user,
    *,
    only: str | None = None,
    force: bool = False,
    summary: str = "",
    require_checks: bool = True,
) -> Published:
    """Check the working copy as an import would and queue its import; nothing is written
    to the course's rows here. ``only``: publish the drafts under that folder (a lesson).
    An exercise whose files a draft changed needs a passing "Kontrol et" of exactly these
    files first (``require_checks``; going back to a revision, already published, does not)."""
    files = working_copy(course, only)
    if files == export_course(course):
        return Published([Problem("", 0, _("There is no draft to publish."))])
    if require_checks and (waiting := unchecked(course, only)):
        return Published(
            [
                Problem(
                    f"{folder}/{EXERCISE_FILE}",
                    1,
                    _(
                        "This exercise changed in a draft and its files as they are now have not passed "
                        "a check: open the exercise, press “Check” and publish once it passes."
                    ),
                )
                for folder in waiting
            ]
        )
    folder = folder_name(course)
    root = unpack(folder, files)
    source = load_course(root)
    problems = course_problems(course, source.problems, folder)
    if not problems and source.slug != course.slug:
        problems.append(
            Problem("course.toml", 1, _("The slug of the course must stay %(slug)s.") % {"slug": course.slug})
        )
    if problems:
        discard(root)
        return Published(problems)
    result = publish_files.enqueue(str(root), force, user.pk, course.pk, summary)
    return Published(result_id=result.id)


@task(queue_name="default", priority=-50)
def publish_files(path: str, force: bool, user_id: int | None, course_id: int, summary: str) -> dict:
    """Import a published working copy as an upload is imported, then record the revision
    and drop the drafts it published (a draft edited meanwhile stays). The outcome names the
    items whose grading changed under students' graded work (studio.impact), for the page to
    offer a regrade."""
    course = Course.objects.get(pk=course_id)
    with course_lock(course.slug):  # what the import changed is what it found, not another's
        before = export_course(course)
        grading = grading_snapshot(course)
        recorded: list[Revision | None] = []

        def record(imported: Course) -> None:
            # Inside the import's transaction: a publish and its revision are stored together.
            recorded.append(_record(imported, user_id, summary, before, export_course(imported)))

        try:
            outcome = import_folder(Path(path), force=force, on_synced=record)
        finally:
            discard(Path(path))  # unless the course now reads it
        if not outcome["imported"]:
            folder = Path(path).name
            outcome["problems"] = [p.removeprefix(f"{folder}/") for p in outcome["problems"]]
            return outcome
        # Answers graded from now on are graded on what was just imported; one graded in the
        # instant since the import committed counts as graded before it, and a regrade on the
        # same answers keeps its grade.
        published_at = timezone.now()
        revision = recorded[0] if recorded else None
        outcome["regrade"] = regrade_offers(course, grading, published_at)
        outcome["published_at"] = published_at.isoformat()
    outcome["revision"] = revision.number if revision else None
    return outcome


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def _record(course: Course, user_id, summary: str, before: dict, after: dict) -> Revision | None:
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    with transaction.atomic():
        Course.objects.select_for_update().filter(pk=course.pk).first()
        for draft in course.draft_files.all():
            if (draft.deleted and draft.path not in after) or (
                not draft.deleted and draft.text.encode() == after.get(draft.path)
            ):
                draft.delete()
        if not changed:
            return None
        number = (course.revisions.aggregate(n=Max("number"))["n"] or 0) + 1
        return Revision.objects.create(
            course=course,
            number=number,
            author_id=user_id,
            summary=summary,
            files={path: sha256(data) for path, data in after.items()},
            changes=[
                {"path": path, "old": _text(before.get(path)), "new": _text(after.get(path))}
                for path in changed
            ],
        )


def revision_files(revision: Revision) -> tuple[dict[str, str], list[str]]:
    """The text of every file of the course as ``revision`` left it, and the paths whose text
    there is no longer known. The text comes from the revisions' recorded changes (a file
    changed here since is recorded with its text before the change) and the course's files
    for those that did not change; a file changed by an upload since, and not here, is lost."""
    course = revision.course
    texts: dict[str, str] = {}
    for data in course.source_files.values_list("data", flat=True):
        texts[sha256(bytes(data))] = bytes(data).decode("utf-8", errors="replace")
    for changes in course.revisions.values_list("changes", flat=True):
        for change in changes:
            for text in (change["old"], change["new"]):
                if text is not None:
                    texts[sha256(text.encode())] = text
    found = {path: texts[digest] for path, digest in revision.files.items() if digest in texts}
    return found, sorted(revision.files.keys() - found.keys())


def revert(course: Course, revision: Revision, user, *, force: bool = False) -> Published:
    """Make the working copy equal to ``revision``'s files and publish it."""
    target, lost = revision_files(revision)
    if lost:
        return Published(
            [
                Problem(
                    path,
                    1,
                    _(
                        "Revision %(number)s cannot be restored: this file was changed by an upload "
                        "since, and its text at that revision is not kept."
                    )
                    % {"number": revision.number},
                )
                for path in lost
            ]
        )
    with transaction.atomic():
        course.draft_files.all().delete()
        for path in export_course(course).keys() - target.keys():
            delete_file(course, path, user)
        for path, text in target.items():
            save_draft(course, path, text, user)
    return publish(
        course,
        user,
        force=force,
        summary=_("Back to revision %(number)s") % {"number": revision.number},
        require_checks=False,
    )
