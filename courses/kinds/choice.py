"""Single choice (radio buttons) and multiple choice (checkboxes, partial credit)."""

import re

from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from ..templatetags_text import html_to_text
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
    stable_shuffle,
)
from .forms import ChoiceForm

_OPTION_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_OPTION_KEYS = {"id", "text", "correct", "explanation", "misconception", "hint"}


class _ChoiceKind(QuestionKind):
    keys = {"options", "shuffle"}
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
            check_table_keys(option, _OPTION_KEYS, keys, "option")
            option_id = expect(
                option.get("id", "abcdefghijklmnopqrstuvwxyz"[index % 26]), str, keys + ("id",), "option id"
            )
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
                    "explanation_html": optional_text(option, "explanation", keys, render),
                    "misconception": expect(
                        option.get("misconception", ""), str, keys + ("misconception",), "misconception"
                    ),
                    "hint_html": optional_text(option, "hint", keys, render),
                }
            )
        self.check_correct_count(sum(o["correct"] for o in out))
        return {"options": out, "shuffle": expect(data.get("shuffle", True), bool, ("shuffle",), "shuffle")}

    def context(self, spec, seed):
        options = [{"id": o["id"], "html": o["html"]} for o in spec["options"]]
        return {"options": stable_shuffle(options, *seed) if spec.get("shuffle", True) else options}

    def _known(self, spec) -> set[str]:
        return {o["id"] for o in spec["options"]}

    def feedback_items(self, spec, answer, grade_feedback):
        chosen = set(self.chosen(answer))
        items = []
        for option in spec["options"]:
            if option["id"] in chosen:
                items.append(
                    {
                        "correct": option["correct"],
                        "label_html": option["html"],
                        "html": option["explanation_html"],
                        "hint_html": option["hint_html"],
                    }
                )
        return items

    def withheld_feedback(self, spec, answer, grade_feedback):
        # Marks per option would give the key away (tick every box, read the marks, answer
        # again): until the last attempt or the answer is shown, only how many are wrong.
        wrong = self.wrong_count(spec, set(self.chosen(answer)))
        if not wrong:
            return None
        return [{"correct": False, "label_html": self.wrong_note(wrong), "html": "", "hint_html": ""}]

    def wrong_count(self, spec, chosen: set[str]) -> int:
        """Options judged wrong; 0 for single choice, whose one mark is the verdict itself."""
        return 0

    def wrong_note(self, wrong: int) -> str:
        return ""

    def solution_items(self, spec):
        return [
            {"label_html": o["html"], "html": o["explanation_html"]} for o in spec["options"] if o["correct"]
        ]

    # -- statistics ------------------------------------------------------------------------
    def choice_keys(self, spec, answered):
        return list(self.chosen(answered.answer or {}))

    def describe(self, spec, key):
        option = next((o for o in spec["options"] if o["id"] == key), None)
        if option is None:  # an option the question no longer has
            return Choice(str(key))
        return Choice(html_to_text(option["html"]), correct=option["correct"])

    def shown_keys(self, spec, counts):
        # Every option in the question's order, the ones nobody chose too.
        return [o["id"] for o in spec["options"]]


@register
class SingleChoice(_ChoiceKind):
    name = "single_choice"
    label = _("single choice")

    def authoring_form(self):
        return ChoiceForm

    def check_correct_count(self, count: int) -> None:
        if count != 1:
            raise SpecProblem(("options",), f"single choice needs exactly one correct option, found {count}")

    def answer_from_post(self, spec, post):
        return {"option": post.get("option", "")}

    def clean_answer(self, spec, answer):
        if not isinstance(answer, dict) or set(answer) != {"option"}:
            raise AnswerError(_('expected {"option": "<option id>"}'))
        option = answer["option"]
        if not isinstance(option, str) or option not in self._known(spec):
            raise AnswerError(_("choose one of the options"))
        return {"option": option}

    def chosen(self, answer) -> list[str]:
        return [answer["option"]]

    def grade(self, spec, answer):
        option = next(o for o in spec["options"] if o["id"] == answer["option"])
        return Grade(
            score=1.0 if option["correct"] else 0.0,
            correct=option["correct"],
            feedback=[{"option": option["id"], "correct": option["correct"]}],
            misconceptions=[option["misconception"]]
            if option["misconception"] and not option["correct"]
            else [],
        )


@register
class MultipleChoice(_ChoiceKind):
    name = "multiple_choice"
    label = _("multiple choice")

    def authoring_form(self):
        return ChoiceForm

    def check_correct_count(self, count: int) -> None:
        if count < 1:
            raise SpecProblem(("options",), "multiple choice needs at least one correct option")

    def answer_from_post(self, spec, post):
        return {"options": post.getlist("options")}

    def clean_answer(self, spec, answer):
        if (
            not isinstance(answer, dict)
            or set(answer) != {"options"}
            or not isinstance(answer["options"], list)
        ):
            raise AnswerError(_('expected {"options": ["<option id>", …]}'))
        options = answer["options"]
        if not options:
            raise NotGradable(_("Choose at least one option, then check your answer."))
        if not all(isinstance(o, str) for o in options) or not set(options) <= self._known(spec):
            raise AnswerError(_("unknown option"))
        if len(set(options)) != len(options):
            raise AnswerError(_("an option was sent twice"))
        return {"options": sorted(options)}

    def chosen(self, answer) -> list[str]:
        return answer["options"]

    def wrong_count(self, spec, chosen: set[str]) -> int:
        return sum((o["id"] in chosen) != o["correct"] for o in spec["options"])

    def wrong_note(self, wrong: int) -> str:
        return ngettext(
            "%(n)d option is not right yet: ticked though it is false, or left though it is true.",
            "%(n)d options are not right yet: ticked though they are false, or left though they are true.",
            wrong,
        ) % {"n": wrong}

    def grade(self, spec, answer):
        """Partial credit: each option judged right (ticked if correct, left if not), minus
        nothing extra; ticking every box therefore never earns full marks."""
        chosen = set(answer["options"])
        right = sum((o["id"] in chosen) == o["correct"] for o in spec["options"])
        score = right / len(spec["options"])
        correct = right == len(spec["options"])
        return Grade(
            score=round(score, 4),
            correct=correct,
            feedback=[
                {"option": o["id"], "correct": o["correct"]} for o in spec["options"] if o["id"] in chosen
            ],
            misconceptions=[
                o["misconception"]
                for o in spec["options"]
                if o["id"] in chosen and not o["correct"] and o["misconception"]
            ],
        )
