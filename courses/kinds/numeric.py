"""Numeric answers: a value with an absolute or relative tolerance and an optional unit."""

import math

from django.utils.translation import gettext_lazy as _

from .base import (
    AnswerError, Grade, QuestionKind, SpecProblem, check_table_keys, expect, optional_text, register,
)

MAX_ANSWER_CHARS = 64


def parse_number(text: str) -> float:
    """Accept Turkish and English decimal marks: "0,5", "0.5", "1e-3", "−2"."""
    cleaned = text.strip().replace("\u2212", "-").replace(" ", "")
    if cleaned.count(",") == 1 and "." not in cleaned:
        cleaned = cleaned.replace(",", ".")
    value = float(cleaned)
    if not math.isfinite(value):
        raise ValueError("not finite")
    return value


@register
class Numeric(QuestionKind):
    name = "numeric"
    label = _("numeric answer")
    keys = {"answer", "tolerance", "relative", "unit", "wrong_values"}
    required = {"answer", "tolerance"}

    def validate(self, data, render):
        self.check_keys(data)
        answer = expect(data["answer"], (int, float), ("answer",), "answer")
        tolerance = expect(data["tolerance"], (int, float), ("tolerance",), "tolerance")
        if not math.isfinite(answer) or not math.isfinite(tolerance) or tolerance < 0:
            raise SpecProblem(("tolerance",), "answer must be finite and tolerance ≥ 0")
        wrong = []
        for index, entry in enumerate(expect(data.get("wrong_values", []), list, ("wrong_values",), "wrong_values")):
            keys = ("wrong_values", index)
            expect(entry, dict, keys, "each wrong value")
            check_table_keys(entry, {"value", "misconception", "hint"}, keys, "wrong value")
            wrong.append({
                "value": float(expect(entry.get("value"), (int, float), keys + ("value",), "value")),
                "misconception": expect(entry.get("misconception", ""), str, keys + ("misconception",), "misconception"),
                "hint_html": optional_text(entry, "hint", keys, render),
            })
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
            except ValueError:
                raise AnswerError(_("write a number, for example 0,25")) from None
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
        return Grade(score=1.0 if ok else 0.0, correct=ok,
                     feedback=[{"value": value, "correct": ok, "hint_html": hint}],
                     misconceptions=misconceptions)

    def feedback_items(self, spec, answer, grade_feedback):
        return [{"correct": f["correct"], "label_html": _format(f["value"], spec["unit"]),
                 "html": "", "hint_html": f.get("hint_html", "")} for f in grade_feedback]

    def solution_items(self, spec):
        return [{"label_html": _format(spec["answer"], spec["unit"]), "html": ""}]


def _format(value: float, unit: str) -> str:
    from django.utils.html import escape
    from django.utils.formats import number_format

    text = number_format(value, decimal_pos=None) if value != int(value) else str(int(value))
    return escape(f"{text} {unit}".strip())
