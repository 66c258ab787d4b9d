"""What a publish changed about grading: students' work graded on the earlier version.

A publish keeps every item by its slug, so an answer or a submission stays attached to its
item whatever changed (its text, its answers, its cases). Its stored grade stays as it was
graded. When the grading changed, the publish page says so per item:

- an exercise whose grading data changed (its ``content_hash``): how many counted submissions
  were graded on an earlier version, with the instructors' regrade (grader.regrade: a preview
  of who goes up or down, then apply) one button away;
- a question whose specification (or a variant's) changed: its graded answers are graded
  again in memory on what students are now asked, and the page says how many would get
  another score. Kinds that run code (code blanks) need the sandbox: their answers are only
  counted. Nothing is stored here: the page offers the regrade (studio.answer_regrade).
"""

from courses.kinds import AnswerError, Grade, NotGradable, get_kind
from courses.models import Attempt, Course, QuestionVariant
from grader.regrade import regradable

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


def regrade_offers(course: Course, before: dict) -> list[dict]:
    """The items whose grading this publish changed and that have graded student work, each
    {"kind": "exercise"|"question", "slug", "title", "graded", "changed"}: ``graded`` answers
    or submissions were graded on an earlier version; ``changed`` of them would get another
    score (None: not known without the sandbox)."""
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
        graded, changed = _answers_that_change(question)
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


def graded_on_earlier(question):
    """Each graded answer to ``question`` that was asked otherwise than today, with what
    ``asked_now`` says of it. Answers given after a reveal score 0 whatever they say: left out."""
    current = current_variants(question)
    answers = (
        Attempt.objects.answers()
        .filter(question=question, after_reveal=False)
        .select_related("variant")
        .order_by("pk")
    )
    for attempt in answers.iterator(chunk_size=500):
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


def _answers_that_change(question) -> tuple[int, int | None]:
    """(graded answers asked otherwise than today, how many of them would score otherwise)."""
    kind = get_kind(question.kind)
    graded = 0
    changed: int | None = 0
    for attempt, new, _variant in graded_on_earlier(question):
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
