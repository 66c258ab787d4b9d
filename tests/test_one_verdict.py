"""One list of verdicts and one rule for what uses up an attempt (the grader core's)."""

from grader.core import Verdict as CoreVerdict
from grader.models import NOT_COUNTED, Verdict


def test_the_database_choices_are_the_cores_verdicts():
    assert [v.value for v in Verdict] == [v.value for v in CoreVerdict]
    assert all(str(Verdict(v.value).label) for v in CoreVerdict)


def test_what_uses_up_an_attempt_is_decided_by_the_core_alone():
    assert [v.value for v in CoreVerdict if not v.counts_as_attempt] == NOT_COUNTED
    assert set(NOT_COUNTED) == {"rejected", "internal_error"}
