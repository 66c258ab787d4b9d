"""A student's assessments across their courses, for İlerlemem: what is due next (with the
student's own dates, overrides applied) and the scores so far, as the assessment's feedback
policy allows them to be shown."""

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from courses.models import Course

from .models import Assessment, AssessmentSession, StudentOverride, Windows
from .scoring import StudentScores, student_scores

# Open work first (the nearest deadline first), then what opens later, then what has closed.
_STATE_ORDER = {"late": 0, "open": 0, "upcoming": 1, "closed": 2}


@dataclass
class AssessmentOverview:
    assessment: Assessment
    windows: Windows
    state: str  # "upcoming", "open", "late" or "closed", for this student
    shown: str  # what the student may see of scores: "full", "score" or "received"
    scores: StudentScores
    session: AssessmentSession | None
    late_credit: int | None  # % earned by work handed in now, while late

    @property
    def next_deadline(self) -> datetime:
        """The moment that matters next: the due date while open, the close while late, the
        exam's own end once started."""
        if self.exam_running and self.session is not None:
            return self.session.deadline
        return self.windows.due if self.state == "open" else self.windows.closes

    @property
    def exam_running(self) -> bool:
        return (
            self.assessment.is_exam
            and self.session is not None
            and not self.session.is_over()
            and self.state in ("open", "late")
        )

    @property
    def exam_ended(self) -> bool:
        return self.assessment.is_exam and self.session is not None and self.session.is_over()

    @property
    def handed_in(self) -> int:
        """How many of the student's items have work handed in."""
        return sum(1 for item in self.scores.items if item.hand_ins or item.manual)

    @property
    def show_score(self) -> bool:
        return self.shown != "received" and self.handed_in > 0


def student_overview(user, courses: list[Course], now: datetime | None = None) -> list[AssessmentOverview]:
    """The student's assessments in these courses, what needs doing first at the top."""
    now = now or timezone.now()
    assessments = list(
        Assessment.objects.active().filter(course__in=courses, course__retired=False).select_related("course")
    )
    overrides = {
        o.assessment_id: o for o in StudentOverride.objects.filter(user=user, assessment__in=assessments)
    }
    sessions = {
        s.assessment_id: s for s in AssessmentSession.objects.filter(user=user, assessment__in=assessments)
    }
    rows = []
    for assessment in assessments:
        override = overrides.get(assessment.pk)
        windows = assessment.windows_for(override)
        state = windows.state_at(now)
        [scores] = student_scores(assessment, [user])
        rows.append(
            AssessmentOverview(
                assessment=assessment,
                windows=windows,
                state=state,
                shown=assessment.feedback_shown(user, now, windows),
                scores=scores,
                session=sessions.get(assessment.pk),
                late_credit=round(100 * (windows.credit_at(now) or 0)) if state == "late" else None,
            )
        )

    def order(row: AssessmentOverview) -> tuple:
        rank = _STATE_ORDER[row.state]
        if rank == 0:
            return (0, row.next_deadline.timestamp())
        if rank == 1:
            return (1, row.windows.opens.timestamp())
        return (2, -row.windows.closes.timestamp())

    return sorted(rows, key=order)


def assessment_rows(course: Course, user) -> list[dict]:
    """The course page's list: each assessment with this student's state, in Istanbul time."""
    now = timezone.now()
    instructor = course.is_instructor(user)
    rows = []
    for assessment in course.assessments.active():
        override = assessment.override_for(user) if user.is_authenticated else None
        windows = assessment.windows_for(override)
        state = windows.state_at(now)
        rows.append(
            {
                "assessment": assessment,
                "windows": windows,
                "state": state,
                "instructor": instructor,
                "credit": round(100 * (windows.credit_at(now) or 0)) if state == "late" else None,
            }
        )
    return rows
