"""Reveal rules: when a student may see an item's answer (or an exercise's sample solution)."""

from datetime import date, datetime, time

from django.utils import timezone

RULES = ("after_first_attempt", "after_attempts", "after_correct", "after_date", "always", "never")
DEFAULT = {"rule": "after_first_attempt"}


def parse_reveal(value) -> dict:
    """Normalise the authored form into {"rule": …, …}; raise ValueError with a reason.

    Authors write ``reveal = "after_correct"``, ``reveal = { after_attempts = 3 }`` or
    ``reveal = { after_date = 2026-12-01T09:00:00+03:00 }``.
    """
    if value is None:
        return dict(DEFAULT)
    if isinstance(value, str):
        if value in ("after_attempts", "after_date"):
            raise ValueError(f"{value} needs a value, e.g. reveal = {{ {value} = … }}")
        if value not in RULES:
            raise ValueError(f"unknown reveal rule {value!r}; use one of {', '.join(RULES)}")
        return {"rule": value}
    if isinstance(value, dict) and len(value) == 1:
        ((rule, argument),) = value.items()
        if rule == "after_attempts":
            if not isinstance(argument, int) or isinstance(argument, bool) or argument < 1:
                raise ValueError("after_attempts must be a whole number of at least 1")
            return {"rule": rule, "attempts": argument}
        if rule == "after_date":
            if isinstance(argument, datetime):
                moment = argument
            elif isinstance(argument, date):
                moment = datetime.combine(argument, time.min)
            else:
                raise ValueError("after_date must be a TOML date or date-time")
            if timezone.is_naive(moment):
                moment = timezone.make_aware(moment)
            return {"rule": rule, "date": moment.isoformat()}
    raise ValueError("reveal must be a rule name or a table with after_attempts or after_date")


def may_reveal(rule: dict, *, attempts: int, solved: bool, now=None) -> bool:
    """Whether the answer may be shown now, given the student's attempts so far."""
    kind = rule.get("rule", DEFAULT["rule"])
    if kind == "always":
        return True
    if kind == "never":
        return False
    if kind == "after_first_attempt":
        return attempts >= 1
    if kind == "after_attempts":
        return attempts >= rule.get("attempts", 1)
    if kind == "after_correct":
        return solved
    if kind == "after_date":
        moment = datetime.fromisoformat(rule["date"])
        return (now or timezone.now()) >= moment
    return False
