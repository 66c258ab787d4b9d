"""What a publish changed about grading: students' work graded on the earlier version.

A publish keeps every item by its slug, so an answer or a submission stays attached to its
item whatever changed (its text, its answers, its cases). Its stored grade stays as it was
graded. When the grading changed, the publish page says so per item:

- an exercise whose grading data changed (its ``content_hash``): how many counted submissions
  were graded on an earlier version, with the instructors' regrade (grader.regrade: a preview
  of who goes up or down, then apply) one button away;
- a question whose specification (or a variant's) changed: its answers graded on the version
  the publish replaced (graded since the question's previous change, studio.GradingChange,
  and before this publish) are graded again in memory on what students are now asked, and
  the page says how many would get another score. Kinds that run code (code blanks) need the
  sandbox: their answers are only counted. Only the change is recorded here: the page offers
  the regrade (studio.answer_regrade).
"""

from datetime import datetime

from django.db.models import DateTimeField, Max, OuterRef, Subquery
from django.db.models.functions import Coalesce, Greatest

from courses.kinds import AnswerError, Grade, NotGradable, get_kind
from courses.models import Attempt, Course, QuestionVariant
from grader.regrade import regradable

from .models import AnswerRegradeItem, GradingChange

# Answers graded again in memory per question at most; past this the count is "unknown".
MAX_ANSWERS = 20_000


def grading_snapshot(course: Course) -> dict:
    """What the grading of each item depends on, to compare before and after a publish."""
    variants: dict[str, list[str]] = {}
    for slug, digest in (
        QuestionVariant.objects.filter(question__course=course, current=True)
        .order_by("question__slug", "index")
        .values_list("question__slug", "digest")
    ):
        variants.setdefault(slug, []).append(digest)
    return {
        "exercises": dict(course.exercises.values_list("slug", "content_hash")),
        "questions": {
            slug: {"spec": spec, "variants": variants.get(slug, [])}
            for slug, spec in course.questions.values_list("slug", "spec")
        },
    }


def regrade_offers(course: Course, before: dict, published_at: datetime) -> list[dict]:
    """The items whose grading this publish (at ``published_at``) changed and that have graded
    student work, each {"kind": "exercise"|"question", "slug", "title", "graded", "changed"}:
    ``graded`` answers or submissions were graded on an earlier version; ``changed`` of them
    would get another score (None: not known without the sandbox). Records each question's
    change (studio.GradingChange), with answers or without."""
    after = grading_snapshot(course)
    offers = []
    for exercise in course.exercises.filter(retired=False).order_by("lesson__order", "order", "slug"):
        if before["exercises"].get(exercise.slug, exercise.content_hash) == exercise.content_hash:
            continue
        stale = regradable(exercise).exclude(graded_hash=exercise.content_hash).count()
        if stale:
            offers.append(
                {
                    "kind": "exercise",
                    "slug": exercise.slug,
                    "title": str(exercise),
                    "graded": stale,
                    "changed": None,
                }
            )
    for question in course.questions.filter(retired=False).order_by("lesson__order", "order", "slug"):
        earlier = before["questions"].get(question.slug)
        if earlier is None or earlier == after["questions"][question.slug]:
            continue
        GradingChange.objects.create(question=question, changed_at=published_at)
        graded, changed = _answers_that_change(question, published_at)
        if graded:
            offers.append(
                {
                    "kind": "question",
                    "slug": question.slug,
                    "title": question.short_text,
                    "graded": graded,
                    "changed": changed,
                }
            )
    return offers


def current_variants(question) -> dict[int, QuestionVariant]:
    return {v.index: v for v in question.variants.filter(current=True)}


def asked_now(question, attempt, current: dict[int, QuestionVariant]):
    """(the spec ``attempt`` is asked on now, the current variant it is asked as) when that is
    not what it was graded on, else None. The spec is {} when its variant is gone (there are
    fewer variants now); the variant is None without variants. An answer without a variant was
    graded on the question's spec before the publish; one with a variant, on that variant's
    spec (kept when the import replaced it)."""
    if not attempt.variant_id:
        return question.spec, None
    now = current.get(attempt.variant.index)
    if now is not None and now.spec == attempt.variant.spec:
        return None
    return (now.spec if now is not None else {}), now


def answers_graded_before(question, published_at: datetime):
    """The graded answers to ``question`` graded on the version the publish at ``published_at``
    replaced: graded (given, stored by a grading worker, or last regraded) before it and since
    the question's previous change. An answer graded before that change was offered to that
    publish's regrade: taken, it was regraded since; declined, it keeps its grade. Answers given
    after a reveal score 0 whatever they say: left out."""
    regraded = Subquery(
        AnswerRegradeItem.objects.filter(attempt=OuterRef("pk"), status=AnswerRegradeItem.Status.DONE)
        .order_by("-finished_at")
        .values("finished_at")[:1]
    )
    answers = (
        Attempt.objects.answers()
        .filter(question=question, after_reveal=False)
        .annotate(
            graded_at=Greatest(
                Coalesce("finished_at", "created_at"),
                Coalesce(regraded, "created_at", output_field=DateTimeField()),
            )
        )
        .filter(graded_at__lt=published_at)
    )
    since = GradingChange.objects.filter(question=question, changed_at__lt=published_at).aggregate(
        last=Max("changed_at")
    )["last"]
    if since is not None:
        answers = answers.filter(graded_at__gte=since)
    return answers.order_by("pk")


def last_change(question) -> datetime | None:
    """When a publish last changed how ``question`` grades (None: none recorded)."""
    return GradingChange.objects.filter(question=question).aggregate(last=Max("changed_at"))["last"]


def graded_on_earlier(question, attempts):
    """Each of ``attempts`` (answers to ``question``) that was asked otherwise than today, with
    what ``asked_now`` says of it."""
    current = current_variants(question)
    for attempt in attempts:
        asked = asked_now(question, attempt, current)
        if asked is not None:
            yield attempt, *asked


def grade_again(kind, spec: dict, answer) -> Grade:
    """``answer`` graded on ``spec``; an answer that no longer fits the question (an option
    gone, a variant gone) scores 0: its grade would not stand."""
    if not spec:
        return Grade(0.0, False)
    try:
        return kind.grade(spec, kind.clean_answer(spec, answer))
    except (AnswerError, NotGradable, KeyError, IndexError, TypeError, ValueError):
        return Grade(0.0, False)


def _answers_that_change(question, published_at: datetime) -> tuple[int, int | None]:
    """(answers graded on the version the publish replaced and asked otherwise than today, how
    many of them would score otherwise)."""
    kind = get_kind(question.kind)
    graded = 0
    changed: int | None = 0
    answers = answers_graded_before(question, published_at).select_related("variant")
    for attempt, new, _variant in graded_on_earlier(question, answers.iterator(chunk_size=500)):
        graded += 1
        if changed is None:
            continue
        if kind is None or graded > MAX_ANSWERS or (new and kind.code_runs(new)):
            changed = None  # not known without the sandbox
            continue
        grade = grade_again(kind, new, attempt.answer)
        if abs(grade.score - attempt.score) > 1e-9 or grade.correct != attempt.correct:
            changed += 1
    return graded, changed
