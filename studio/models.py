"""Drafts and revisions of a course's files, edited in the browser by its instructors.

A draft is a file overlay: the course's working copy is its stored files (courses.SourceFile,
exactly what the last import read) with its DraftFiles laid over them. Nothing of a draft
reaches the lessons and questions students see until it is published, and a publish goes
through the same validation and import as a course folder (studio.drafts).
"""

import difflib
import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from courses.models import Attempt, Course, Question
from jobs.models import Job


class DraftFile(models.Model):
    """One file of the course's working copy that differs from what is published."""

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="draft_files", verbose_name=_("course")
    )
    path = models.CharField(_("path"), max_length=500)  # inside the course folder, "/"-separated
    text = models.TextField(_("text"), blank=True)
    deleted = models.BooleanField(_("deleted"), default=False)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, verbose_name=_("updated by")
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ["course", "path"]
        constraints = [
            models.UniqueConstraint(fields=["course", "path"], name="draft_file_path_unique_in_course")
        ]
        verbose_name = _("draft file")
        verbose_name_plural = _("draft files")

    def __str__(self) -> str:
        return self.path


class Revision(models.Model):
    """One publish: who, when, and every file it changed with its text before and after."""

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="revisions", verbose_name=_("course")
    )
    number = models.PositiveIntegerField(_("number"))
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, verbose_name=_("author")
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    summary = models.CharField(_("summary"), max_length=300, blank=True)
    # {path: sha256} of every file the course held after this publish.
    files = models.JSONField(_("files"), default=dict)
    # [{"path", "old", "new"}]: the text of each changed file before and after (None: absent).
    changes = models.JSONField(_("changes"), default=list)

    class Meta:
        ordering = ["course", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["course", "number"], name="revision_number_unique_in_course")
        ]
        verbose_name = _("revision")
        verbose_name_plural = _("revisions")

    def __str__(self) -> str:
        return f"{self.course.slug} #{self.number}"

    def diffs(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """(path, lines of its unified diff) for each file this publish changed; each line
        with its kind ("add", "remove", "hunk" or "" for context), for the page to mark."""
        result = []
        for change in self.changes:
            old, new = change["old"], change["new"]
            lines = difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=change["path"] if old is not None else "/dev/null",
                tofile=change["path"] if new is not None else "/dev/null",
            )
            result.append((change["path"], [(_line_kind(line), line.rstrip("\n")) for line in lines]))
        return result


def _line_kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    return {"+": "add", "-": "remove", "@": "hunk"}.get(line[:1], "")


def folder_digest(files: dict[str, bytes], folder: str) -> str:
    """A digest of the files under ``folder`` (paths and contents): what a check checked."""
    digest = hashlib.sha256()
    for path in sorted(files):
        if path.startswith(f"{folder}/"):
            digest.update(path.encode() + b"\0" + files[path] + b"\0")
    return digest.hexdigest()


class ExerciseCheck(Job):
    """The "Kontrol et" (check) of an exercise's draft files: the checks of validate_course (the reference
    passes every case, every catalogued misconception is caught) run by a grading worker on
    the files as they were when asked. A publish that changes an exercise needs a passing check
    of exactly its files (``digest``)."""

    task_path = "studio.checks.check_exercise_draft"
    priority = -50  # below students' own grading

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="exercise_checks", verbose_name=_("course")
    )
    folder = models.CharField(_("exercise folder"), max_length=500)  # inside the course folder
    digest = models.CharField(_("digest of the files"), max_length=64, db_index=True)
    # {path inside the course folder: text} of the exercise's files when the check was asked for.
    files = models.JSONField(_("files"), default=dict)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("requested by"),
    )
    created_at = models.DateTimeField(_("requested"), default=timezone.now)
    passed = models.BooleanField(_("passed"), null=True)
    # {"problems": [...], "cases": [{"name", "hidden", "passed", "message"}],
    #  "misconceptions": [{"tag", "file", "caught", "verdict", "failed"}], "variants": N}
    report = models.JSONField(_("report"), default=dict)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("exercise check")
        verbose_name_plural = _("exercise checks")

    def __str__(self) -> str:
        return f"{self.course.slug}: {self.folder}"

    def lease_duration(self) -> timedelta:
        # The reference twice (cases, then the details) and each variant's programs: generous,
        # so that a live worker never loses its lease; a dead one is found by the sweeper.
        return timedelta(minutes=10, seconds=settings.GRADING_LEASE_MARGIN)

    @classmethod
    def passing(cls, course: Course, folder: str, digest: str) -> bool:
        return cls.objects.filter(
            course=course, folder=folder, digest=digest, status=cls.Status.DONE, passed=True
        ).exists()


class AnswerRegrade(models.Model):
    """An instructor's regrade, after a publish changed a question's answers, of the students'
    answers graded on the earlier version (studio.answer_regrade). Each answer's old and new
    grade is one item: answers that run no code are graded in the request, code blanks by a
    grading worker (an item is a job of the one queue); the answer keeps its old grade until
    its new one is stored."""

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="answer_regrades", verbose_name=_("course")
    )
    # The publish (its task result) whose page offered it, to link the two pages.
    publish_id = models.CharField(_("publish"), max_length=64, blank=True, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("requested by"),
    )
    created_at = models.DateTimeField(_("requested"), default=timezone.now)
    # Set once every chosen answer was graded again or queued: a regrade cut off midway (its
    # request died) is offered again for the answers it did not reach.
    finished_at = models.DateTimeField(_("all answers reached"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("answer regrade")
        verbose_name_plural = _("answer regrades")

    def __str__(self) -> str:
        return f"{self.course.slug} · {self.created_at:%Y-%m-%d %H:%M}"


class AnswerRegradeItem(Job):
    """One student's answer graded again on what its question asks now: its grade before and
    after (None until graded)."""

    task_path = "studio.answer_regrade.regrade_answer"
    priority = -50  # below students' own grading

    regrade = models.ForeignKey(
        AnswerRegrade, on_delete=models.CASCADE, related_name="items", verbose_name=_("answer regrade")
    )
    attempt = models.ForeignKey(
        Attempt, on_delete=models.CASCADE, related_name="+", verbose_name=_("attempt")
    )
    old_score = models.FloatField(_("old score"))
    old_correct = models.BooleanField(_("old correct"))
    new_score = models.FloatField(_("new score"), null=True, blank=True)
    new_correct = models.BooleanField(_("new correct"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        ordering = ["regrade", "pk"]
        verbose_name = _("regraded answer")
        verbose_name_plural = _("regraded answers")

    def __str__(self) -> str:
        return f"{self.regrade} · {self.attempt_id}"

    @property
    def delta(self) -> float | None:
        return None if self.new_score is None else self.new_score - self.old_score


class GradingChange(models.Model):
    """A publish changed how a question grades (its specification or a variant's), at
    ``changed_at``. A publish offers to regrade only the answers graded since the question's
    previous change: those graded before were offered to that publish, and an instructor who
    declined it keeps their grades."""

    question = models.ForeignKey(
        Question, on_delete=models.CASCADE, related_name="+", verbose_name=_("question")
    )
    changed_at = models.DateTimeField(_("changed"))

    class Meta:
        ordering = ["question", "-changed_at"]
        indexes = [models.Index(fields=["question", "changed_at"])]
        verbose_name = _("grading change")
        verbose_name_plural = _("grading changes")

    def __str__(self) -> str:
        return f"{self.question.slug} · {self.changed_at:%Y-%m-%d %H:%M}"
