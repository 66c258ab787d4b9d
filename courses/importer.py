"""Sync a loaded course into the database: create, update, retire — never delete."""

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from assessments.models import Assessment
from jobs.signals import send_score_changed

from .authoring import AssessmentSource, CourseSource, Problem, QuestionSource, load_course
from .exercises import check_generated_questions
from .exporter import (
    CourseFilesError,
    browser_files_overwritten,
    content_digests,
    edited_since_import,
    read_folder,
    store_files,
)
from .models import BEFORE_VARIANTS, Course, Enrollment, Exercise, Lesson, Question, QuestionVariant
from .variants import index_for, item_key


class ImportRefused(Exception):
    def __init__(self, problems: list[Problem]):
        super().__init__(f"{len(problems)} problem(s) in the course files")
        self.problems = problems


@dataclass
class ImportReport:
    course: str
    changes: list[str] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    # What the import changed of each row ("question <slug>"), to tell what it would overwrite.
    by_row: dict[str, list[str]] = field(default_factory=dict)
    # It created, retired or restored a scored item, moved one to another lesson, or changed an
    # assessment's items or late credit: what each student's scores are out of may differ.
    scores_may_change: bool = False

    def note(self, symbol: str, what: str, slug: str, detail: str = "", fields: Iterable[str] = ()) -> None:
        """One line of the report; ``fields``: the row's fields a "~" line changed."""
        line = f"{symbol} {what} {slug}" + (f" ({detail})" if detail else "")
        self.changes.append(line)
        if symbol != "+":  # creating a row overwrites nothing
            self.by_row.setdefault(f"{what} {slug}", []).append(detail)
        changed = set(fields)
        if (what in SCORED and (symbol in "+-" or "retired" in changed)) or changed & SCORE_FIELDS.get(
            what, set()
        ):
            self.scores_may_change = True


def _sync(model, lookup: dict, values: dict, report: ImportReport, what: str, slug: str):
    """Create or update one row by its stable identity, noting what changed."""
    obj = model.objects.filter(**lookup).first()
    if obj is None:
        obj = model.objects.create(**lookup, **values)
        report.note("+", what, slug, "created")
        return obj
    changed = [name for name, value in values.items() if getattr(obj, name) != value]
    if changed:
        for name in changed:
            setattr(obj, name, values[name])
        obj.save(update_fields=changed)
        report.note(
            "~",
            what,
            slug,
            "restored" if "retired" in changed and not obj.retired else "changed: " + ", ".join(changed),
            fields=changed,
        )
    return obj


def _retire(queryset, keep: set[str], report: ImportReport, what: str) -> None:
    for obj in queryset.filter(retired=False).exclude(slug__in=keep):
        obj.retired = True
        obj.save(update_fields=["retired"])
        report.note("-", what, obj.slug, "retired; student data kept")


def import_course(path, *, prepare_exercises=None, force: bool = False, on_synced=None) -> ImportReport:
    """Validate the folder at ``path`` and sync it in one transaction; keep its files.

    ``prepare_exercises(source)`` may add problems (e.g. reference solutions that fail) and
    build hidden grading data before anything is written. Without it, the questions' generators
    still run (in the sandbox): a question with variants cannot be stored without them. On any
    problem, ImportRefused is raised and the database is left as it was. So it is when the
    import would overwrite a row or file edited in the database since the last import, unless
    ``force``: the problems then say what would be overwritten. ``on_synced(course)`` runs last
    inside the import's transaction (the studio records its revision there: both or neither).
    """
    source: CourseSource = load_course(path)
    files: dict[str, bytes] = {}
    if not source.problems:
        try:
            files = read_folder(source.root)
        except CourseFilesError as exc:
            source.problems.append(Problem(source.root.name, 1, str(exc)))
    if not source.problems and prepare_exercises is not None:
        source.problems.extend(prepare_exercises(source))
    if not source.problems and any(q.generator and not q.variants for q in source.all_questions()):
        source.problems.extend(check_generated_questions(source, prepare=False))
    if source.problems:
        raise ImportRefused(source.problems)
    report = ImportReport(source.slug, warnings=list(source.warnings))
    with transaction.atomic():
        existing = Course.objects.filter(slug=source.slug).first()
        edited = edited_since_import(existing) if existing is not None and not force else []
        course = _sync(
            Course,
            {"slug": source.slug},
            {
                "title": source.title,
                "summary": source.summary,
                "description_html": source.description_html,
                "enrollment": source.enrollment,
                "enrollment_code": source.enrollment_code,
                "score_policy": source.score_policy,
                "retired": False,
            },
            report,
            "course",
            source.slug,
        )
        for lesson_source in source.lessons:
            lesson = _sync(
                Lesson,
                {"course": course, "slug": lesson_source.slug},
                {
                    "title": lesson_source.title,
                    "order": lesson_source.order,
                    "summary": lesson_source.summary,
                    "body_source": lesson_source.body_source,
                    "body_html": lesson_source.body_html,
                    "source_file": lesson_source.file,
                    "retired": False,
                },
                report,
                "lesson",
                lesson_source.slug,
            )
            for q in lesson_source.questions:
                before = Question.objects.filter(course=course, slug=q.slug).first()
                question = _sync(
                    Question,
                    {"course": course, "slug": q.slug},
                    {
                        "lesson": lesson,
                        "kind": q.kind,
                        "order": q.order,
                        "prompt_html": q.prompt_html,
                        "explanation_html": q.explanation_html,
                        "spec": q.spec,
                        "reveal": q.reveal,
                        "hints": q.hints,
                        "max_attempts": q.max_attempts,
                        "variant_count": max(1, len(q.variants)),
                        "generated": bool(q.variants),
                        "source_file": f"{q.file}:{q.line}",
                        "retired": False,
                    },
                    report,
                    "question",
                    q.slug,
                )
                _sync_variants(question, q, report, before)
            for e in lesson_source.exercises:
                was = Exercise.objects.filter(course=course, slug=e.slug).values_list(
                    "content_hash", "variant_count"
                )
                before_exercise = was.first()
                exercise = _sync(
                    Exercise,
                    {"course": course, "slug": e.slug},
                    {
                        "lesson": lesson,
                        "title": e.title,
                        "order": e.order,
                        "prompt_html": e.prompt_html,
                        "starter_code": e.starter_code,
                        "solution_code": e.solution_code,
                        "spec": e.spec,
                        "reveal": e.reveal,
                        "hints": e.hints,
                        "content_hash": e.content_hash,
                        "variant_count": e.variant_count,
                        "source_dir": e.file.rsplit("/", 1)[0],
                        "misconceptions": [
                            {"tag": m["tag"], "hint_html": m["hint_html"]} for m in e.misconceptions
                        ],
                        "retired": False,
                    },
                    report,
                    "exercise",
                    e.slug,
                )
                if before_exercise is not None:
                    _note_exercise_variants(exercise, *before_exercise, report)
        _retire(course.lessons.all(), {l.slug for l in source.lessons}, report, "lesson")
        _retire(course.questions.all(), {q.slug for q in source.all_questions()}, report, "question")
        _retire(course.exercises.all(), {e.slug for e in source.all_exercises()}, report, "exercise")
        for a in source.assessments:
            _sync(
                Assessment,
                {"course": course, "slug": a.slug},
                _assessment_values(a),
                report,
                "assessment",
                a.slug,
            )
        _retire(course.assessments.all(), {a.slug for a in source.assessments}, report, "assessment")
        overwritten = _overwritten(course, edited, report, files, source.root.name)
        if existing is not None and not force:
            overwritten += [
                Problem(
                    f"{source.root.name}/{path}",
                    1,
                    f"this file was changed in the browser (the authoring area or an upload) since this "
                    f"folder was imported; this import would {action} it: import with --force to do so",
                )
                for path, action in browser_files_overwritten(course, files, source.root)
            ]
        if overwritten:
            raise ImportRefused(overwritten)  # and the transaction undoes the sync
        store_files(course, files)
        if existing is not None and report.scores_may_change:
            # A new or retired item changes what each student's lesson and course scores are
            # out of: receivers (LTI grade passback) send them again.
            send_score_changed(Course, course.enrollments.values_list("user_id", flat=True), course.pk)
        # Where the files came from is no change to the course: an export imported again is none.
        Course.objects.filter(pk=course.pk).update(
            imported_at=timezone.now(), source_path=str(source.root), imported_digests=content_digests(course)
        )
        if on_synced is not None:
            on_synced(course)
    return report


SCORED = ("lesson", "question", "exercise")
# Fields whose change changes what scores are out of: an item moved to another lesson, an
# assessment's items or late credit.
SCORE_FIELDS = {"question": {"lesson"}, "exercise": {"lesson"}, "assessment": {"items", "late"}}


def _overwritten(
    course: Course, edited: list[str], report: ImportReport, files: dict[str, bytes], folder: str
) -> list[Problem]:
    """What this import would overwrite of the rows and files edited since the last import
    (an edited row the import leaves as it is, or a file it brings back unchanged, is no loss)."""
    stored = dict(course.source_files.values_list("path", "data"))
    problems = []
    for key in edited:
        what, _, name = key.partition(" ")
        if what == "file":
            if name not in files or bytes(stored.get(name, b"")) != files[name]:
                problems.append(
                    Problem(
                        f"{folder}/{name}",
                        1,
                        "this file was changed in the database since the last import; this import would "
                        + ("remove" if name not in files else "overwrite")
                        + " it: import with --force to do so",
                    )
                )
        elif report.by_row.get(key):
            file, line = _row_file(course, what, name, folder)
            problems.append(
                Problem(
                    file,
                    line,
                    f"{key} was changed in the database since the last import; this import would "
                    f"overwrite it ({'; '.join(report.by_row[key])}): import with --force to do so",
                )
            )
    return problems


def _row_file(course: Course, what: str, slug: str, folder: str) -> tuple[str, int]:
    """The file and line a row comes from, to name them in a problem."""
    if what == "course":
        return f"{folder}/course.toml", 1
    if what == "exercise":
        return f"{course.exercises.get(slug=slug).source_dir}/exercise.toml", 1
    model = {"lesson": Lesson, "question": Question, "assessment": Assessment}[what]
    source_file = (
        model._default_manager.filter(course=course, slug=slug).values_list("source_file", flat=True).get()
    )
    file, _, line = source_file.partition(":")
    return file, int(line) if line.isdigit() else 1


def _sync_variants(
    question: Question, source: QuestionSource, report: ImportReport, before: Question | None
) -> None:
    """Make the source's variants the question's current ones. A changed variant gets a new row
    and the old one stays (not current) for the attempts graded on it; the report says how many
    enrolled students now see a different question than before. A question that gains a
    generator keeps what it asked before as a variant that is no longer current, and the
    attempts graded on it point to it."""
    old = {v.index: v for v in question.variants.filter(current=True)}
    new = {v["index"]: v for v in source.variants}
    if not old and not new:
        return
    now = timezone.now()
    if new and not old and before is not None and not before.generated:
        earlier = {
            "params": {},
            "prompt_html": before.prompt_html,
            "explanation_html": before.explanation_html,
            "spec": before.spec,
        }
        kept = QuestionVariant.objects.create(
            question=question, index=0, seed=0, digest=BEFORE_VARIANTS, current=False, **earlier
        )
        graded = question.attempts.filter(variant__isnull=True)
        answered = graded.values("user_id").distinct().count()
        graded.update(variant=kept)
        report.note(
            "~",
            "variants of",
            source.slug,
            f"the question now has {len(new)} variants; {answered} student(s) had answered it as it was, "
            "and those attempts keep that question",
        )
    replaced = [v.pk for index, v in old.items() if index not in new or new[index]["digest"] != v.digest]
    question.variants.filter(pk__in=replaced).update(current=False)
    QuestionVariant.objects.bulk_create(
        QuestionVariant(
            question=question,
            index=index,
            seed=v["seed"],
            params=v["params"],
            prompt_html=v["prompt_html"],
            explanation_html=v["explanation_html"],
            spec=v["spec"],
            digest=v["digest"],
            created_at=now,
        )
        for index, v in new.items()
        if index not in old or old[index].digest != v["digest"]
    )
    if not old:
        report.note("+", "variants of", source.slug, f"{len(new)} variants")
        return
    salt, key = question.course.variant_salt, item_key(question)
    old_count, new_count = max(1, len(old)), max(1, len(new))
    students = Enrollment.objects.filter(course=question.course).values_list("user_id", flat=True)
    moved = 0
    for user_id in students.iterator():
        was = old.get(index_for(salt, user_id, key, old_count))
        now_asked = new.get(index_for(salt, user_id, key, new_count))
        moved += (was.digest if was else None) != (now_asked["digest"] if now_asked else None)
    if replaced or len(new) != len(old):
        report.note(
            "~",
            "variants of",
            source.slug,
            f"{len(new)} variants, {len(replaced)} changed; {moved} student(s) now get a different variant; "
            "their earlier attempts keep the variant they were graded on",
        )


def _note_exercise_variants(exercise: Exercise, old_hash: str, old_count: int, report: ImportReport) -> None:
    """Say how many enrolled students' hidden cases an exercise's new version changed: all of
    them when its files changed and it has variants (cases.py draws them again), else those
    whose variant moved because the number of variants changed. Earlier submissions keep the
    variant and seed they were graded on."""
    new_count = exercise.variant_count
    if max(old_count, new_count) <= 1 or (old_hash == exercise.content_hash and old_count == new_count):
        return
    salt, key = exercise.course.variant_salt, item_key(exercise)
    students = Enrollment.objects.filter(course=exercise.course).values_list("user_id", flat=True)
    if old_hash != exercise.content_hash:
        moved = students.count()
    else:
        moved = sum(
            index_for(salt, user_id, key, old_count) != index_for(salt, user_id, key, new_count)
            for user_id in students.iterator()
        )
    report.note(
        "~",
        "variants of",
        exercise.slug,
        f"{new_count} variants; {moved} student(s) now get other hidden cases; "
        "their earlier submissions keep the variant and seed they were graded on",
    )


def _assessment_values(a: AssessmentSource) -> dict:
    return {
        "title": a.title,
        "kind": a.kind,
        "opens": a.opens,
        "due": a.due,
        "closes": a.closes,
        "late": [{"until": w["until"].isoformat(), "credit": w["credit"]} for w in a.late],
        "time_limit_minutes": a.time_limit_minutes,
        "password": a.password,
        "feedback": a.feedback,
        "max_attempts": a.max_attempts,
        "items": a.items,
        "source_file": a.file,
        "retired": False,
    }
