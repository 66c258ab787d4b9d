"""Matching: pair each left item with a right item; optional distractors; partial credit."""

import hashlib

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
from .forms import MatchingForm


def _right_id(text: str) -> str:
    # Derived from the text, not the position, so ids never hint at which left item they fit.
    return "r" + hashlib.sha256(text.encode()).hexdigest()[:10]


@register
class Matching(QuestionKind):
    name = "matching"
    label = _("matching")
    keys = {"pairs", "distractors", "wrong_pairs"}
    required = {"pairs"}

    def authoring_form(self):
        return MatchingForm

    def validate(self, data, render):
        self.check_keys(data)
        pairs = expect(data["pairs"], list, ("pairs",), "pairs")
        if len(pairs) < 2:
            raise SpecProblem(("pairs",), "a matching question needs at least two pairs")
        lefts, rights = [], {}
        seen_left = set()
        for index, pair in enumerate(pairs):
            keys = ("pairs", index)
            expect(pair, dict, keys, "each pair")
            check_table_keys(pair, {"left", "right", "explanation"}, keys, "pair")
            left = expect(pair.get("left", ""), str, keys + ("left",), "left").strip()
            right = expect(pair.get("right", ""), str, keys + ("right",), "right").strip()
            if not left or not right:
                raise SpecProblem(keys, "every pair needs a non-empty left and right")
            if left in seen_left:
                raise SpecProblem(keys + ("left",), f"left item {left!r} appears twice")
            seen_left.add(left)
            right_id = _right_id(right)
            rights.setdefault(right_id, {"id": right_id, "html": render(right, keys + ("right",))})
            lefts.append(
                {
                    "id": f"l{index + 1}",
                    "html": render(left, keys + ("left",)),
                    "answer": right_id,
                    "explanation_html": optional_text(pair, "explanation", keys, render),
                }
            )
        distractors = expect(data.get("distractors", []), list, ("distractors",), "distractors")
        for index, text in enumerate(distractors):
            text = expect(text, str, ("distractors", index), "a distractor").strip()
            right_id = _right_id(text)
            if right_id in rights:
                raise SpecProblem(("distractors", index), f"distractor {text!r} is also a right item")
            rights[right_id] = {"id": right_id, "html": render(text, ("distractors", index))}
        wrong = []
        left_ids = {_strip(p.get("left", "")): f"l{i + 1}" for i, p in enumerate(pairs)}
        for index, entry in enumerate(
            expect(data.get("wrong_pairs", []), list, ("wrong_pairs",), "wrong_pairs")
        ):
            keys = ("wrong_pairs", index)
            expect(entry, dict, keys, "each wrong pair")
            check_table_keys(entry, {"left", "right", "misconception", "hint"}, keys, "wrong pair")
            left_id = left_ids.get(_strip(entry.get("left", "")))
            right_id = _right_id(_strip(entry.get("right", "")))
            if left_id is None or right_id not in rights:
                raise SpecProblem(
                    keys, "a wrong pair must name a left item and a right item of this question"
                )
            wrong.append(
                {
                    "left": left_id,
                    "right": right_id,
                    "misconception": expect(
                        entry.get("misconception", ""), str, keys + ("misconception",), "misconception"
                    ),
                    "hint_html": optional_text(entry, "hint", keys, render),
                }
            )
        return {"lefts": lefts, "rights": list(rights.values()), "wrong_pairs": wrong}

    def context(self, spec, seed):
        # "text": for what holds no markup (an <option>, an aria-label); escaped once, by the template.
        return {
            "lefts": [
                {"id": l["id"], "html": l["html"], "text": html_to_text(l["html"])} for l in spec["lefts"]
            ],
            "rights": [{**r, "text": html_to_text(r["html"])} for r in stable_shuffle(spec["rights"], *seed)],
        }

    def answer_from_post(self, spec, post):
        return {"pairs": {l["id"]: post.get(f"pair-{l['id']}", "") for l in spec["lefts"]}}

    def clean_answer(self, spec, answer):
        if not isinstance(answer, dict) or set(answer) != {"pairs"} or not isinstance(answer["pairs"], dict):
            raise AnswerError(_('expected {"pairs": {"<left id>": "<right id>", …}}'))
        pairs = answer["pairs"]
        left_ids = {l["id"] for l in spec["lefts"]}
        right_ids = {r["id"] for r in spec["rights"]}
        if not set(pairs) <= left_ids:
            raise AnswerError(_("unknown left item"))
        cleaned = {}
        for left_id, right_id in pairs.items():
            if right_id in ("", None):
                continue
            if not isinstance(right_id, str) or right_id not in right_ids:
                raise AnswerError(_("unknown right item"))
            cleaned[left_id] = right_id
        if not cleaned:
            raise NotGradable(_("Match at least one item, then check your answer."))
        return {"pairs": dict(sorted(cleaned.items()))}

    def grade(self, spec, answer):
        pairs = answer["pairs"]
        feedback, misconceptions = [], []
        for left in spec["lefts"]:
            chosen = pairs.get(left["id"])
            ok = chosen == left["answer"]
            feedback.append({"left": left["id"], "right": chosen, "correct": ok})
            for wrong in spec["wrong_pairs"]:
                if (
                    not ok
                    and wrong["left"] == left["id"]
                    and wrong["right"] == chosen
                    and wrong["misconception"]
                ):
                    misconceptions.append(wrong["misconception"])
        right = sum(item["correct"] for item in feedback)
        return Grade(
            score=round(right / len(spec["lefts"]), 4),
            correct=right == len(spec["lefts"]),
            feedback=feedback,
            misconceptions=misconceptions,
        )

    def withheld_feedback(self, spec, answer, grade_feedback):
        # Marks per pair would give the key away: until the last attempt or the answer is
        # shown, only how many pairs are wrong.
        wrong = sum(1 for entry in grade_feedback if not entry.get("correct"))
        if not wrong:
            return None
        note = ngettext("%(n)d pair is not right yet.", "%(n)d pairs are not right yet.", wrong) % {
            "n": wrong
        }
        return [{"correct": False, "label_html": note, "html": "", "hint_html": ""}]

    def feedback_items(self, spec, answer, grade_feedback):
        rights = {r["id"]: r["html"] for r in spec["rights"]}
        lefts = {l["id"]: l for l in spec["lefts"]}
        hints = {(w["left"], w["right"]): w["hint_html"] for w in spec["wrong_pairs"]}
        items = []
        for entry in grade_feedback:
            left = lefts.get(entry["left"])
            if left is None:
                continue
            chosen = rights.get(entry.get("right"), "—")
            items.append(
                {
                    "correct": entry["correct"],
                    "label_html": f"{left['html']} → {chosen}",
                    "html": left["explanation_html"] if entry["correct"] else "",
                    "hint_html": ""
                    if entry["correct"]
                    else hints.get((entry["left"], entry.get("right")), ""),
                }
            )
        return items

    def solution_items(self, spec):
        rights = {r["id"]: r["html"] for r in spec["rights"]}
        return [
            {"label_html": f"{l['html']} → {rights[l['answer']]}", "html": l["explanation_html"]}
            for l in spec["lefts"]
        ]

    # -- statistics ------------------------------------------------------------------------
    def choice_keys(self, spec, answered):
        return list(((answered.answer or {}).get("pairs") or {}).items())

    def describe(self, spec, key):
        left_id, right_id = key
        left = next((l for l in spec["lefts"] if l["id"] == left_id), None)
        right = next((r for r in spec["rights"] if r["id"] == right_id), None)
        left_text = html_to_text(left["html"]) if left else left_id
        right_text = html_to_text(right["html"]) if right else right_id
        return Choice(f"{left_text} → {right_text}", correct=left is not None and left["answer"] == right_id)


def _strip(value) -> str:
    return value.strip() if isinstance(value, str) else ""
