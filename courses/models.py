"""Courses as authored in files: course → lessons → questions and exercises.

Slugs are the stable identities: an import updates rows in place by slug, and a file that
disappears marks its row retired instead of deleting it, so student data always survives.
"""

import operator
from datetime import timedelta
from functools import reduce
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from jobs.models import Job
from jobs.queue import JobQuerySet

from .templatetags_text import html_to_text
from .variants import index_for, item_key, new_salt

# Student work is never deleted with content (on_delete=PROTECT): items are retired instead.
RETIRE_HELP = _(
    "Retire instead of deleting: a retired item leaves the course pages, and its students' "
    "answers, submissions and progress are kept. Items with student work cannot be deleted."
)


class ActiveQuerySet(models.QuerySet):
    def active(self):
        return self.filter(retired=False)

    def matching(self, slug: str) -> list:
        """Active items for ``slug`` or ``course/slug`` (command-line lookups); may be several."""
        course_slug, _, item_slug = slug.rpartition("/")
        found = self.active().filter(slug=item_slug).select_related("course")
        if course_slug:
            found = found.filter(course__slug=course_slug)
        return list(found)


class CourseQuerySet(ActiveQuerySet):
    def taught_by(self, user):
        if user.is_superuser:
            return self
        return self.filter(instructors=user)


class Course(models.Model):
    class EnrollmentMode(models.TextChoices):
        OPEN = "open", _("Open to everyone")
        CODE = "code", _("With an enrolment code")

    class ScorePolicy(models.TextChoices):
        BEST = "best", _("Best attempt counts")
        LAST = "last", _("Last attempt counts")

    slug = models.SlugField(_("slug"), unique=True)
    title = models.CharField(_("title"), max_length=200)
    summary = models.TextField(_("summary"), blank=True)
    description_html = models.TextField(_("description (rendered)"), blank=True)
    enrollment = models.CharField(
        _("enrolment"), max_length=8, choices=EnrollmentMode, default=EnrollmentMode.OPEN
    )
    enrollment_code = models.CharField(_("enrolment code"), max_length=64, blank=True)
    score_policy = models.CharField(
        _("score policy"), max_length=8, choices=ScorePolicy, default=ScorePolicy.BEST
    )
    # Decides which variant of an item each student gets; never shown, never in a URL.
    variant_salt = models.CharField(_("variant salt"), max_length=64, default=new_salt, editable=False)
    instructors = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="taught_courses",
        verbose_name=_("instructors"),
    )
    source_path = models.CharField(_("source folder"), max_length=500, blank=True)
    retired = models.BooleanField(_("retired"), default=False, help_text=RETIRE_HELP)
    imported_at = models.DateTimeField(_("last imported"), null=True, blank=True)
    # What the last import left in the database, one short digest per row and per stored file
    # (courses.exporter.content_digests): a row edited since then is not overwritten silently.
    imported_digests = models.JSONField(_("digests at the last import"), default=dict, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = CourseQuerySet.as_manager()

    class Meta:
        ordering = ["title"]
        verbose_name = _("course")
        verbose_name_plural = _("courses")

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("course", args=[self.slug])

    def is_instructor(self, user) -> bool:
        if not user.is_authenticated:
            return False
        return user.is_superuser or self.instructors.filter(pk=user.pk).exists()

    def is_enrolled(self, user) -> bool:
        return user.is_authenticated and self.enrollments.filter(user=user).exists()

    def can_view(self, user) -> bool:
        """Lessons are readable by enrolled students, the course's instructors and admins."""
        return self.is_enrolled(user) or self.is_instructor(user)

    def enroll(self, user, code: str = "") -> bool:
        """Enrol ``user``; False when the course asks for a code and ``code`` is wrong."""
        if self.enrollment == self.EnrollmentMode.CODE and code.strip() != self.enrollment_code:
            return False
        Enrollment.objects.get_or_create(user=user, course=self)
        return True

    def active_lessons(self):
        # Lists of lessons never need their (large) bodies.
        return self.lessons.active().defer("body_source", "body_html").order_by("order", "slug")


class SourceFile(models.Model):
    """One file of a course's folder, byte for byte as the last import read it: the export
    writes these back (courses.exporter). Pages never load them."""

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="source_files", verbose_name=_("course")
    )
    path = models.CharField(_("path"), max_length=500)  # inside the course folder, "/"-separated
    data = models.BinaryField(_("content"))
    sha256 = models.CharField(_("SHA-256"), max_length=64)

    class Meta:
        ordering = ["course", "path"]
        constraints = [
            models.UniqueConstraint(fields=["course", "path"], name="source_file_path_unique_in_course")
        ]
        verbose_name = _("source file")
        verbose_name_plural = _("source files")

    def __str__(self) -> str:
        return self.path


class Lesson(models.Model):
    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="lessons", verbose_name=_("course")
    )
    slug = models.SlugField(_("slug"))
    title = models.CharField(_("title"), max_length=200)
    order = models.PositiveIntegerField(_("order"), default=0)
    summary = models.TextField(_("summary"), blank=True)
    body_source = models.TextField(_("body (Markdown)"), blank=True)
    body_html = models.TextField(_("body (rendered)"), blank=True)
    source_file = models.CharField(_("source file"), max_length=500, blank=True)
    retired = models.BooleanField(_("retired"), default=False, help_text=RETIRE_HELP)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    objects = ActiveQuerySet.as_manager()

    class Meta:
        ordering = ["course", "order", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="lesson_slug_unique_in_course")
        ]
        verbose_name = _("lesson")
        verbose_name_plural = _("lessons")

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("lesson", args=[self.course.slug, self.slug])

    def neighbours(self) -> tuple["Lesson | None", "Lesson | None"]:
        lessons = list(self.course.active_lessons())
        index = next(i for i, lesson in enumerate(lessons) if lesson.pk == self.pk)
        previous = lessons[index - 1] if index > 0 else None
        following = lessons[index + 1] if index + 1 < len(lessons) else None
        return previous, following

    def items(self) -> list:
        """The lesson's active questions and exercises, in authored order."""
        questions = list(self.questions.active())
        exercises = list(self.exercises.active())
        for item in questions + exercises:
            # Their templates link through lesson and course: not one query per item.
            item.lesson, item.course = self, self.course
        items = sorted(questions + exercises, key=lambda item: (item.order, item.slug))
        # Questions are called by their number in the lesson ("Soru 3"), on its page and in the gradebook.
        for number, question in enumerate((item for item in items if not item.is_exercise), start=1):
            question.number = number
        return items


class Question(models.Model):
    """A self-test item; ``kind`` names a class in the question-kind registry."""

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="questions", verbose_name=_("course")
    )
    lesson = models.ForeignKey(
        Lesson, on_delete=models.CASCADE, related_name="questions", verbose_name=_("lesson")
    )
    slug = models.SlugField(_("slug"))
    kind = models.CharField(_("kind"), max_length=32)
    order = models.PositiveIntegerField(_("order"), default=0)
    prompt_html = models.TextField(_("prompt (rendered)"))
    explanation_html = models.TextField(_("explanation (rendered)"), blank=True)
    # Kind-specific data as validated by the kind (options, pairs, blanks, …).
    spec = models.JSONField(_("specification"), default=dict)
    reveal = models.JSONField(_("reveal rule"), default=dict)
    # The hint ladder: each step's rendered HTML, opened one by one after failed attempts (HintOpening).
    hints = models.JSONField(_("hints (rendered)"), default=list, blank=True)
    max_attempts = models.PositiveIntegerField(_("maximum attempts"), null=True, blank=True)
    # With a generator (params.py), each student answers one of this many variants (QuestionVariant).
    variant_count = models.PositiveSmallIntegerField(_("variants"), default=1)
    generated = models.BooleanField(_("has a generator"), default=False)
    source_file = models.CharField(_("source file"), max_length=500, blank=True)
    retired = models.BooleanField(_("retired"), default=False, help_text=RETIRE_HELP)

    objects = ActiveQuerySet.as_manager()

    class Meta:
        ordering = ["lesson", "order", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="question_slug_unique_in_course")
        ]
        verbose_name = _("question")
        verbose_name_plural = _("questions")

    def __str__(self) -> str:
        return self.short_text

    is_exercise = False

    @property
    def short_text(self) -> str:
        """The prompt as one short line of plain text: the question's name where a title is needed."""
        return Truncator(html_to_text(self.prompt_html) or self.slug).chars(70)

    @cached_property
    def number(self) -> int:
        """Its number among its lesson's questions ("Soru 3"); Lesson.items() sets it for a whole lesson at once."""
        slugs = list(self.lesson.questions.active().order_by("order", "slug").values_list("slug", flat=True))
        return slugs.index(self.slug) + 1 if self.slug in slugs else 0

    @property
    def kind_label(self) -> str:
        from .kinds import get_kind

        kind = get_kind(self.kind)
        return kind.label if kind else self.kind

    @property
    def kind_template(self) -> str:
        from .kinds import get_kind

        kind = get_kind(self.kind)
        return kind.template if kind else ""

    # The variant this instance was set to ask (ask()); None: the question's own text and spec.
    asked_variant: "QuestionVariant | None" = None

    def variant_index(self, user) -> int:
        return index_for(self.course.variant_salt, user.pk, item_key(self), self.variant_count)

    def variant_for(self, user) -> "QuestionVariant | None":
        """The variant ``user`` answers (None when the question has no generator)."""
        if not self.generated:
            return None
        return (
            QuestionVariant.objects.filter(question=self, index=self.variant_index(user), current=True)
            .order_by()
            .first()
        )

    def ask(self, variant: "QuestionVariant | None") -> "Question":
        """This instance, in memory only, as ``variant`` asks it: its prompt, explanation and spec
        (what every page, grade and feedback then reads). Never saved."""
        if variant is not None:
            self.prompt_html, self.explanation_html, self.spec = (
                variant.prompt_html,
                variant.explanation_html,
                variant.spec,
            )
            self.asked_variant = variant
        return self

    def ask_for(self, user) -> "Question":
        """This question as ``user`` is asked it (their own variant)."""
        return self.ask(self.variant_for(user))

    def save(self, *args, **kwargs):
        if self.asked_variant is not None:
            raise RuntimeError("a question set to ask one variant must not be saved")
        super().save(*args, **kwargs)


# The digest of the variant that keeps what a question asked before it had a generator.
BEFORE_VARIANTS = "before-variants"


class QuestionVariantQuerySet(models.QuerySet["QuestionVariant"]):
    def current_for(self, questions, user) -> dict[int, "QuestionVariant"]:
        """The variant ``user`` answers of each of ``questions`` that has variants, by question
        id: one query for a whole lesson."""
        wanted = [
            models.Q(question_id=question.pk, index=question.variant_index(user))
            for question in questions
            if question.generated
        ]
        if not wanted:
            return {}
        return {v.question_id: v for v in self.filter(reduce(operator.or_, wanted), current=True).order_by()}


def spec_answered(answered) -> dict:
    """The spec an attempt (or preview) was graded on: its variant's, else its question's."""
    return answered.variant.spec if answered.variant_id else answered.question.spec


class QuestionVariant(models.Model):
    """One variant of a question with a generator: its parameters and the question as rendered
    with them. An import that changes a variant keeps the old row (not current) for the
    attempts graded on it and adds a new one."""

    question = models.ForeignKey(
        Question, on_delete=models.CASCADE, related_name="variants", verbose_name=_("question")
    )
    index = models.PositiveSmallIntegerField(_("variant"))
    seed = models.BigIntegerField(_("seed"))
    params = models.JSONField(_("parameters"), default=dict)
    prompt_html = models.TextField(_("prompt (rendered)"))
    explanation_html = models.TextField(_("explanation (rendered)"), blank=True)
    spec = models.JSONField(_("specification"), default=dict)
    digest = models.CharField(_("content hash"), max_length=64)
    current = models.BooleanField(_("current"), default=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    objects = QuestionVariantQuerySet.as_manager()

    class Meta:
        ordering = ["question", "index", "-current", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["question", "index"],
                condition=models.Q(current=True),
                name="one_current_variant_per_index",
            )
        ]
        indexes = [models.Index(fields=["question", "index", "current"])]
        verbose_name = _("question variant")
        verbose_name_plural = _("question variants")

    def __str__(self) -> str:
        return f"{self.question.slug} #{self.index + 1}"


class Exercise(models.Model):
    """A code exercise graded in the sandbox; its solution and cases never reach a browser."""

    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="exercises", verbose_name=_("course")
    )
    lesson = models.ForeignKey(
        Lesson, on_delete=models.CASCADE, related_name="exercises", verbose_name=_("lesson")
    )
    slug = models.SlugField(_("slug"))
    title = models.CharField(_("title"), max_length=200)
    order = models.PositiveIntegerField(_("order"), default=0)
    prompt_html = models.TextField(_("prompt (rendered)"), blank=True)
    starter_code = models.TextField(_("starter code"), blank=True)
    solution_code = models.TextField(_("reference solution"), blank=True)
    # The grader's part of exercise.toml, as parsed by grader.core.parse_spec.
    spec = models.JSONField(_("grading specification"), default=dict)
    reveal = models.JSONField(_("reveal rule"), default=dict)
    # The hint ladder, as for questions.
    hints = models.JSONField(_("hints (rendered)"), default=list, blank=True)
    content_hash = models.CharField(_("content hash"), max_length=64, blank=True)
    # With ``variants = N`` in exercise.toml, cases.py makes each variant's hidden cases from its own seed.
    variant_count = models.PositiveSmallIntegerField(_("variants"), default=1)
    # The misconception catalog's tags and hints: [{"tag", "hint_html"}].
    misconceptions = models.JSONField(_("misconceptions"), default=list, blank=True)
    source_dir = models.CharField(_("source folder"), max_length=500, blank=True)
    retired = models.BooleanField(_("retired"), default=False, help_text=RETIRE_HELP)

    objects = ActiveQuerySet.as_manager()

    class Meta:
        ordering = ["lesson", "order", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="exercise_slug_unique_in_course")
        ]
        verbose_name = _("exercise")
        verbose_name_plural = _("exercises")

    def __str__(self) -> str:
        return self.title or self.slug

    is_exercise = True
    kind_label = _("code exercise")

    @property
    def misconception_hints(self) -> dict[str, str]:
        return {m["tag"]: m["hint_html"] for m in self.misconceptions}

    def variant_index(self, user) -> int:
        return index_for(self.course.variant_salt, user.pk, item_key(self), self.variant_count)


class Enrollment(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="enrollments",
        verbose_name=_("student"),
    )
    course = models.ForeignKey(
        Course, on_delete=models.CASCADE, related_name="enrollments", verbose_name=_("course")
    )
    created_at = models.DateTimeField(_("enrolled"), default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "course"], name="one_enrollment_per_course")]
        verbose_name = _("enrolment")
        verbose_name_plural = _("enrolments")

    def __str__(self) -> str:
        return f"{self.user} → {self.course}"


class LessonProgress(models.Model):
    """When a student first and last opened a lesson, and when they marked it done."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="lesson_progress",
        verbose_name=_("student"),
    )
    lesson = models.ForeignKey(
        Lesson, on_delete=models.PROTECT, related_name="progress", verbose_name=_("lesson")
    )
    first_visited_at = models.DateTimeField(_("first visit"), default=timezone.now)
    last_visited_at = models.DateTimeField(_("last visit"), default=timezone.now)
    completed_at = models.DateTimeField(_("completed"), null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "lesson"], name="one_progress_per_lesson")]
        verbose_name = _("lesson progress")
        verbose_name_plural = _("lesson progress")

    def __str__(self) -> str:  # listed by the admin when it refuses to delete the lesson
        return f"{self.user} · {self.lesson}"

    # Reading a lesson should not write to the database on every request.
    VISIT_RESOLUTION = timedelta(minutes=5)

    @classmethod
    def record_visit(cls, user, lesson) -> "LessonProgress":
        now = timezone.now()
        progress = cls.objects.filter(user=user, lesson=lesson).first()
        if progress is None:
            progress, _created = cls.objects.get_or_create(
                user=user, lesson=lesson, defaults={"first_visited_at": now, "last_visited_at": now}
            )
        elif now - progress.last_visited_at > cls.VISIT_RESOLUTION:
            cls.objects.filter(pk=progress.pk).update(last_visited_at=now)
        return progress


class GradedAnswer(Job):
    """An answer to a question and its grade. Code blanks run in the sandbox through the grading
    queue, never in the web request: such an answer is stored queued and a worker grades it
    under a lease (a job: jobs.models.Job); any other answer is stored graded."""

    task_path = "courses.tasks.grade_attempt"
    # Queued for many re-enqueue rounds and never claimed: stop, so the student can answer again.
    unclaimed_rounds = 10

    answer = models.JSONField(_("answer"), null=True, blank=True)
    score = models.FloatField(_("score"), default=0.0)
    correct = models.BooleanField(_("correct"), default=False)
    feedback = models.JSONField(_("feedback"), default=list, blank=True)
    misconceptions = models.JSONField(_("misconceptions"), default=list, blank=True)
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    status = models.CharField(
        _("status"), max_length=8, choices=Job.Status, default=Job.Status.DONE, db_index=True
    )
    # The variant it was graded on, kept even when a later import changes the question's variants.
    variant = models.ForeignKey(
        QuestionVariant,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("variant"),
    )

    class Meta:
        abstract = True


class AttemptQuerySet(JobQuerySet):
    def answers(self):
        """Graded answers (not reveals, not answers still waiting for the sandbox)."""
        return self.filter(kind=Attempt.Kind.ANSWER, status=Attempt.Status.DONE)


class Attempt(GradedAnswer):
    """One answer to a question (or one press of "Cevabı göster"), kept forever."""

    class Kind(models.TextChoices):
        ANSWER = "answer", _("answer")
        REVEAL = "reveal", _("answer revealed")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="attempts", verbose_name=_("student")
    )
    # Student work outlives content: a retired question keeps its attempts; deleting one is refused.
    question = models.ForeignKey(
        Question, on_delete=models.PROTECT, related_name="attempts", verbose_name=_("question")
    )
    kind = models.CharField(_("kind"), max_length=8, choices=Kind, default=Kind.ANSWER)
    # Answers given after the answer was revealed are kept but score 0.
    after_reveal = models.BooleanField(_("after reveal"), default=False)

    # django-stubs types a manager as a class variable, so narrowing it is an "override".
    objects = AttemptQuerySet.as_manager()  # type: ignore[misc]

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["user", "question", "created_at"])]
        verbose_name = _("attempt")
        verbose_name_plural = _("attempts")

    def __str__(self) -> str:
        return f"{self.user} · {self.question.slug} · {self.score:.2f}"

    def status_url(self) -> str:
        return reverse("attempt_status", args=[self.pk])


class AnswerPreview(GradedAnswer):
    """An instructor's answer in the student preview of a lesson: graded like a student's (code
    blanks by a worker through the queue) but never an attempt, so it never reaches the
    gradebook, the statistics or anyone's progress."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("user")
    )
    question = models.ForeignKey(
        Question, on_delete=models.CASCADE, related_name="+", verbose_name=_("question")
    )

    task_kwargs: ClassVar[dict[str, Any]] = {"preview": True}

    # Read like an attempt's by the question's state and templates.
    kind = Attempt.Kind.ANSWER
    after_reveal = False

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("answer preview")
        verbose_name_plural = _("answer previews")

    def __str__(self) -> str:
        return f"{self.user} · {self.question.slug} · {_('preview')}"

    def status_url(self) -> str:
        return reverse("attempt_status", args=[self.pk]) + "?onizleme=1"


class HintOpening(models.Model):
    """A student opened one step of an item's hint ladder (courses.hints): kept forever, once
    per student, item and step. Its time tells the statistics what was answered after it."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="hint_openings",
        verbose_name=_("student"),
    )
    # Exactly one of the two; student work outlives content (PROTECT), as attempts do.
    question = models.ForeignKey(
        Question,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="hint_openings",
        verbose_name=_("question"),
    )
    exercise = models.ForeignKey(
        Exercise,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="hint_openings",
        verbose_name=_("exercise"),
    )
    step = models.PositiveSmallIntegerField(_("hint step"))  # 1-based
    opened_at = models.DateTimeField(_("opened"), default=timezone.now)

    class Meta:
        ordering = ["opened_at", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(question__isnull=False, exercise__isnull=True)
                | models.Q(question__isnull=True, exercise__isnull=False),
                name="hint_opening_of_one_item",
            ),
            models.UniqueConstraint(
                fields=["user", "question", "step"],
                condition=models.Q(question__isnull=False),
                name="one_opening_per_question_hint",
            ),
            models.UniqueConstraint(
                fields=["user", "exercise", "step"],
                condition=models.Q(exercise__isnull=False),
                name="one_opening_per_exercise_hint",
            ),
        ]
        verbose_name = _("hint opening")
        verbose_name_plural = _("hint openings")

    def __str__(self) -> str:
        item = self.question or self.exercise
        return f"{self.user} · {item.slug if item else '?'} · {self.step}"
