"""Numeric answers: a value with an absolute or relative tolerance and an optional unit."""

import math
import re

from django.utils.formats import get_format, number_format
from django.utils.html import escape
from django.utils.translation import gettext_lazy as _

from .base import (
    AnswerError,
    Choice,
    Grade,
    NotGradable,
    QuestionKind,
    SpecProblem,
    check_table_keys,
    expect,
    optional_text,
    register,
)
from .forms import NumericForm

MAX_ANSWER_CHARS = 64


# One decimal mark, either one, and no thousands separators: "0,5", "0.5", "1e-3", "−2".
_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?")
# "32.768" or "1,234": a group of three after a short whole part reads as thousands to many.
_THOUSANDS_LOOK = re.compile(r"[-+]?([1-9]\d{0,2})([.,])(\d{3})")


class AmbiguousNumber(ValueError):
    """The text is a number only under one of two readings; the message says how to write it."""


def parse_number(text: str, *, dot_is_decimal: bool = False) -> float:
    """Accept Turkish and English decimal marks: "0,5", "0.5", "1e-3", "−2". Refuse what a
    thousands separator makes ambiguous ("32.768" in Turkish, "1,234" in English, "1.234,5")
    with AmbiguousNumber instead of guessing. ``dot_is_decimal``: the number was read from
    Python or NumPy notation, where a dot can only be a decimal point."""
    cleaned = text.strip().replace("\u2212", "-").replace(" ", "")
    marks = [c for c in cleaned if c in ".,"]
    if len(marks) > 1 and re.fullmatch(r"[-+]?[\d.,]+", cleaned):
        raise AmbiguousNumber(
            _(
                "“%(text)s” has more than one dot or comma. Write numbers without thousands "
                "separators and with one decimal mark, for example %(example)s."
            )
            % {"text": text.strip(), "example": number_format(1234.5, 1)}
        )
    if not _NUMBER.fullmatch(cleaned):
        raise ValueError("not a number")
    looks = _THOUSANDS_LOOK.fullmatch(cleaned)
    if (
        looks
        and looks.group(2) == get_format("THOUSAND_SEPARATOR")
        and not (dot_is_decimal and looks.group(2) == ".")
    ):
        _whole, _mark, _rest = looks.groups()
        raise AmbiguousNumber(
            _(
                "“%(text)s” can be read two ways. Numbers are written without thousands "
                "separators: write %(whole)s for the whole number, or %(decimal)s for the decimal."
            )
            % {
                "text": text.strip(),
                "whole": cleaned.replace(looks.group(2), ""),
                "decimal": cleaned.replace(looks.group(2), get_format("DECIMAL_SEPARATOR")),
            }
        )
    value = float(cleaned.replace(",", "."))
    if not math.isfinite(value):
        raise ValueError("not finite")
    return value


@register
class Numeric(QuestionKind):
    name = "numeric"
    label = _("numeric answer")
    keys = {"answer", "tolerance", "relative", "unit", "wrong_values"}
    required = {"answer", "tolerance"}

    def authoring_form(self):
        return NumericForm

    def validate(self, data, render):
        self.check_keys(data)
        answer = expect(data["answer"], (int, float), ("answer",), "answer")
        tolerance = expect(data["tolerance"], (int, float), ("tolerance",), "tolerance")
        if not math.isfinite(answer) or not math.isfinite(tolerance) or tolerance < 0:
            raise SpecProblem(("tolerance",), "answer must be finite and tolerance ≥ 0")
        wrong = []
        for index, entry in enumerate(
            expect(data.get("wrong_values", []), list, ("wrong_values",), "wrong_values")
        ):
            keys = ("wrong_values", index)
            expect(entry, dict, keys, "each wrong value")
            check_table_keys(entry, {"value", "misconception", "hint"}, keys, "wrong value")
            wrong.append(
                {
                    "value": float(expect(entry.get("value"), (int, float), keys + ("value",), "value")),
                    "misconception": expect(
                        entry.get("misconception", ""), str, keys + ("misconception",), "misconception"
                    ),
                    "hint_html": optional_text(entry, "hint", keys, render),
                }
            )
        return {
            "answer": float(answer),
            "tolerance": float(tolerance),
            "relative": expect(data.get("relative", False), bool, ("relative",), "relative"),
            "unit": expect(data.get("unit", ""), str, ("unit",), "unit"),
            "wrong_values": wrong,
        }

    def context(self, spec, seed):
        return {"unit": spec["unit"]}

    def answer_from_post(self, spec, post):
        return {"value": post.get("value", "")}

    def clean_answer(self, spec, answer):
        if not isinstance(answer, dict) or set(answer) != {"value"}:
            raise AnswerError(_('expected {"value": <number>}'))
        value = answer["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise AnswerError(_("the answer must be a number"))
        if isinstance(value, str):
            if len(value) > MAX_ANSWER_CHARS:
                raise AnswerError(_("the answer is too long"))
            try:
                value = parse_number(value)
            except AmbiguousNumber as exc:
                raise NotGradable(str(exc)) from None  # explained, not counted as an attempt
            except ValueError:
                # A typing slip, not a tampered form: said kindly, not counted.
                raise NotGradable(
                    _("“%(text)s” is not a number. Write a number, for example %(example)s.")
                    % {"text": value.strip(), "example": number_format(0.25, 2)}
                ) from None
        if not math.isfinite(value):
            raise AnswerError(_("the answer must be a finite number"))
        return {"value": float(value)}

    def _close(self, spec, value, target, tolerance) -> bool:
        if spec["relative"]:
            return abs(value - target) <= tolerance * abs(target)
        return abs(value - target) <= tolerance

    def grade(self, spec, answer):
        value = answer["value"]
        ok = self._close(spec, value, spec["answer"], spec["tolerance"])
        misconceptions, hint = [], ""
        if not ok:
            for wrong in spec["wrong_values"]:
                if self._close(spec, value, wrong["value"], spec["tolerance"]):
                    if wrong["misconception"]:
                        misconceptions.append(wrong["misconception"])
                    hint = wrong["hint_html"]
                    break
        return Grade(
            score=1.0 if ok else 0.0,
            correct=ok,
            feedback=[{"value": value, "correct": ok, "hint_html": hint}],
            misconceptions=misconceptions,
        )

    def feedback_items(self, spec, answer, grade_feedback):
        return [
            {
                "correct": f["correct"],
                "label_html": _format(f["value"], spec["unit"]),
                "html": "",
                "hint_html": f.get("hint_html", ""),
            }
            for f in grade_feedback
        ]

    def solution_items(self, spec):
        return [{"label_html": _format(spec["answer"], spec["unit"]), "html": ""}]

    # -- statistics: the most common wrong values ------------------------------------------
    stats_template = "instructors/kinds/wrong_answers.html"

    def choice_keys(self, spec, answered):
        value = (answered.answer or {}).get("value")
        return [] if answered.correct or value is None else [value]

    def describe(self, spec, key):
        return Choice(_number_text(key, spec["unit"]))

    def shown_keys(self, spec, counts):
        return [key for key, _count in counts.most_common(10)]


def _number_text(value: float, unit: str) -> str:
    text = number_format(value, decimal_pos=None) if value != int(value) else str(int(value))
    return f"{text} {unit}".strip()


def _format(value: float, unit: str) -> str:
    return escape(_number_text(value, unit))
