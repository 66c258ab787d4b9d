"""Single choice (radio buttons) and multiple choice (checkboxes, partial credit)."""

import re

from .base import QuestionKind, SpecProblem, expect, register

_OPTION_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


class _ChoiceKind(QuestionKind):
    keys = {"options"}
    required = {"options"}

    def validate(self, data, render):
        self.check_keys(data)
        options = expect(data["options"], list, ("options",), "options")
        if len(options) < 2:
            raise SpecProblem(("options",), "a choice question needs at least two options")
        seen = set()
        out = []
        for index, option in enumerate(options):
            keys = ("options", index)
            expect(option, dict, keys, "each option")
            for key in option:
                if key not in {"id", "text", "correct", "explanation", "misconception", "hint"}:
                    raise SpecProblem(keys + (key,), f"unknown option key {key!r}")
            option_id = expect(option.get("id", "abcdefghijklmnopqrstuvwxyz"[index % 26]), str, keys + ("id",), "option id")
            if not _OPTION_ID.match(option_id):
                raise SpecProblem(keys + ("id",), "option id must be lowercase letters, digits, - or _")
            if option_id in seen:
                raise SpecProblem(keys + ("id",), f"duplicate option id {option_id!r}")
            seen.add(option_id)
            text = expect(option.get("text", ""), str, keys + ("text",), "option text")
            if not text.strip():
                raise SpecProblem(keys + ("text",), "option text is empty")
            out.append(
                {
                    "id": option_id,
                    "html": render(text, keys + ("text",)),
                    "correct": expect(option.get("correct", False), bool, keys + ("correct",), "correct"),
                    "explanation_html": render(
                        expect(option.get("explanation", ""), str, keys + ("explanation",), "explanation"),
                        keys + ("explanation",),
                    ),
                    "misconception": expect(option.get("misconception", ""), str, keys + ("misconception",), "misconception"),
                    "hint_html": render(expect(option.get("hint", ""), str, keys + ("hint",), "hint"), keys + ("hint",)),
                }
            )
        self.check_correct_count(sum(o["correct"] for o in out))
        return {"options": out}


@register
class SingleChoice(_ChoiceKind):
    name = "single_choice"

    def check_correct_count(self, count: int) -> None:
        if count != 1:
            raise SpecProblem(("options",), f"single choice needs exactly one correct option, found {count}")


@register
class MultipleChoice(_ChoiceKind):
    name = "multiple_choice"

    def check_correct_count(self, count: int) -> None:
        if count < 1:
            raise SpecProblem(("options",), "multiple choice needs at least one correct option")
