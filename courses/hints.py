"""The hint ladder: an item's hints in steps (``hints = ["…", "…"]`` in its file), opened one
at a time by the student. Step k may be opened after the student's k-th failed attempt on the
item, once step k-1 is open; each opening is recorded once (HintOpening) and stays open.

Only attempts the lesson page shows count: work handed in to an assessment that keeps its
feedback back says nothing here (a hint offered after it would tell the student it was wrong).
No step is offered once the item is solved or its answer shown, nor while an assessment that
holds the item keeps its feedback back (the caller says so: ``refused``).
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from grader.models import Verdict

from .models import Enrollment, Exercise, HintOpening, Question
from .progress import ExerciseState
from .selftest import QuestionState

# The button of each step: Turkish puts the suffix after the number by its sound ("1'i", "2'yi").
SHOW_STEP = (
    _("Show hint 1"),
    _("Show hint 2"),
    _("Show hint 3"),
    _("Show hint 4"),
    _("Show hint 5"),
)


class HintRefused(Exception):
    """The step may not be opened now; nothing is recorded. The message says why."""


@dataclass
class HintLadder:
    """One student's view of an item's hints."""

    item: Question | Exercise
    opened: int = 0  # steps open so far (always the first ones)
    failed: int = 0  # failed attempts that count (as the lesson shows them)
    closed: bool = False  # solved, answer shown, or held by an assessment: nothing more to open

    @property
    def steps(self) -> list[str]:
        return list(self.item.hints or [])

    @property
    def shown(self) -> list[tuple[int, str]]:
        """The open steps: (number, HTML)."""
        return list(enumerate(self.steps[: self.opened], start=1))

    @property
    def next_step(self) -> int | None:
        """The step after the open ones, None when all are open."""
        return self.opened + 1 if self.opened < len(self.steps) else None

    @property
    def can_open(self) -> bool:
        step = self.next_step
        return step is not None and not self.closed and self.failed >= step

    @property
    def waiting(self) -> bool:
        """A next step exists but needs another failed attempt first."""
        return self.next_step is not None and not self.closed and not self.can_open

    @property
    def button_label(self) -> str:
        step = self.next_step
        return str(SHOW_STEP[step - 1]) if step and step <= len(SHOW_STEP) else ""

    @property
    def open_url(self) -> str:
        item = self.item
        name = "open_exercise_hint" if item.is_exercise else "open_question_hint"
        return reverse(name, args=[item.course.slug, item.lesson.slug, item.slug])

    @property
    def refresh_url(self) -> str:
        """Where the page's script reads an exercise's block again after a verdict ("" for questions:
        their whole fragment comes back after an answer)."""
        item = self.item
        return (
            reverse("exercise_hints", args=[item.course.slug, item.lesson.slug, item.slug])
            if item.is_exercise
            else ""
        )

    def state_key(self) -> tuple:
        """What the ladder shows, for the lesson page's fragment key (courses.pagecache)."""
        return (self.opened, self.can_open, self.waiting)

    def refusal(self, step: int) -> str:
        """Why ``step`` may not be opened now; "" when it may."""
        if not 1 <= step <= len(self.steps):
            return str(_("This item has no such hint."))
        if step <= self.opened:
            return ""  # already open: opening it again changes nothing
        if self.closed:
            return str(_("No more hints are offered for this item now."))
        if step > self.opened + 1:
            return str(_("Open the hints in order: first the one before this."))
        if self.failed < step:
            return str(_("This hint opens after another wrong attempt."))
        return ""


def opened_steps(user, items) -> dict[tuple[str, int], int]:
    """How many steps ``user`` has open of each item with hints (one query for a lesson)."""
    questions = [item.pk for item in items if not item.is_exercise and item.hints]
    exercises = [item.pk for item in items if item.is_exercise and item.hints]
    if not user.is_authenticated or not (questions or exercises):
        return {}
    steps: dict[tuple[str, int], set[int]] = defaultdict(set)
    rows = HintOpening.objects.filter(user=user).filter(
        Q(question_id__in=questions) | Q(exercise_id__in=exercises)
    )
    for question_id, exercise_id, step in rows.values_list("question_id", "exercise_id", "step"):
        steps[("question", question_id) if question_id else ("exercise", exercise_id)].add(step)
    # Steps are opened in order; count only the unbroken run from 1.
    counted = {}
    for key, numbers in steps.items():
        run = 0
        while run + 1 in numbers:
            run += 1
        counted[key] = run
    return counted


def question_ladder(
    question: Question, state: QuestionState, opened: int, *, refused: bool = False
) -> HintLadder:
    failed = sum(
        1 for answer in state.shown_answers if answer.status == answer.Status.DONE and not answer.correct
    )
    return HintLadder(question, opened, failed, closed=refused or state.solved or state.revealed)


def exercise_ladder(
    exercise: Exercise, state: ExerciseState, opened: int, *, refused: bool = False
) -> HintLadder:
    failed = sum(1 for row in state.submissions if row.counted and row.verdict != Verdict.PASSED)
    return HintLadder(exercise, opened, failed, closed=refused or state.status == "solved" or state.revealed)


def open_hint(user, item: Question | Exercise, step: int, ladder_for: Callable[[], HintLadder]) -> HintLadder:
    """Record that ``user`` opened ``step`` of ``item``'s hints; ``ladder_for()`` reads the ladder as it is now
    (called under the student's enrolment lock, as answers and reveals are). Raises
    HintRefused with the reason when the step may not be opened; opening an open step again
    records nothing."""
    with transaction.atomic():
        Enrollment.objects.select_for_update().filter(user=user, course_id=item.course_id).first()
        ladder = ladder_for()
        if reason := ladder.refusal(step):
            raise HintRefused(reason)
        if step > ladder.opened:
            of = {"exercise" if item.is_exercise else "question": item}
            try:
                with transaction.atomic():
                    HintOpening.objects.create(user=user, step=step, **of)
            except IntegrityError:
                pass  # a second press that raced the first: it is open
            ladder.opened = step
        return ladder
