"""Ordering (Parsons): put the steps of a computation in order, leaving out the distractors.

The author gives the steps, optional distractor steps and a dependency graph (``after``): a
step comes after the steps it names. Every order of the steps that respects the graph (every
topological order, without a distractor) is right, so two steps that do not depend on each
other may come in either order.
"""

import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from itertools import combinations

from django.http import QueryDict
from django.utils.crypto import salted_hmac
from django.utils.html import escape
from django.utils.translation import gettext as _g
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from ..templatetags_text import html_to_text
from .base import (
    Answered,
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
from .forms import OrderingForm

MAX_ITEMS = 12  # steps and distractors together: more is a chore on a phone, and 12! orders
_STEP_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_UNUSED = "0"  # the place a form gives a step the student leaves out
_PARAGRAPH = re.compile(r"^<p>(.*)</p>$", re.S)


def _form_key(step_id: str, text: str) -> str:
    # The form names a step by a keyed digest, not by its id: an author's id ("wrong-1") could
    # say which steps are distractors, and a plain hash of a guessed id and the text shown
    # could be tried offline.
    return (
        "s" + salted_hmac("dikkat.ordering.step", f"{step_id}\0{text}", algorithm="sha256").hexdigest()[:10]
    )


def _needs(after: dict[str, list[str]], step_id: str) -> set[str]:
    """The steps ``step_id`` needs, directly or through others (``after`` has no cycle)."""
    found: set[str] = set()
    todo = list(after.get(step_id, []))
    while todo:
        need = todo.pop()
        if need not in found:
            found.add(need)
            todo.extend(after.get(need, []))
    return found


def _inline(html: str) -> str:
    """A step's HTML without the paragraph around it, to stand inside a sentence."""
    match = _PARAGRAPH.match(html.strip())
    return match.group(1) if match and "<p>" not in match.group(1) else html


def _say(template: str, **parts: str) -> str:
    """A translated sentence with HTML parts (already safe) put in: the sentence is escaped."""
    return escape(template) % parts


@register
class Ordering(QuestionKind):
    name = "ordering"
    label = _("ordering")
    keys = {"steps", "distractors", "after", "wrong_orders"}
    required = {"steps", "after"}

    def authoring_form(self):
        return OrderingForm

    # -- authoring -------------------------------------------------------------------------
    def validate(self, data: dict, render: Callable[[str, tuple], str]) -> dict:
        self.check_keys(data)
        steps = self._items(data, "steps", render)
        if len(steps) < 2:
            raise SpecProblem(("steps",), "an ordering question needs at least two steps")
        distractors = self._items(data, "distractors", render)
        if len(steps) + len(distractors) > MAX_ITEMS:
            raise SpecProblem(
                ("steps",),
                f"{len(steps)} steps and {len(distractors)} distractors: at most {MAX_ITEMS} together",
            )
        seen: set[str] = set()
        for key, items in (("steps", steps), ("distractors", distractors)):
            for index, item in enumerate(items):
                if item["id"] in seen:
                    raise SpecProblem((key, index, "id"), f"duplicate step id {item['id']!r}")
                seen.add(item["id"])
        after = self._after(data, [s["id"] for s in steps], {d["id"] for d in distractors})
        solution = _topological_order([s["id"] for s in steps], after)
        return {
            "steps": steps,
            "distractors": distractors,
            "after": after,
            "wrong_orders": self._wrong_orders(data, after, render),
            "solution": solution,
            "orders": _count_orders([s["id"] for s in steps], after),
        }

    def _wrong_orders(self, data: dict, after: dict[str, list[str]], render) -> list[dict]:
        """Known wrong orders: a step placed before one it comes after, with a misconception
        tag and a hint for the student who does it."""
        wrong = []
        entries = expect(data.get("wrong_orders", []), list, ("wrong_orders",), "wrong_orders")
        for index, entry in enumerate(entries):
            keys = ("wrong_orders", index)
            expect(entry, dict, keys, "each wrong order")
            check_table_keys(entry, {"step", "before", "misconception", "hint"}, keys, "wrong order")
            step = expect(entry.get("step", ""), str, keys + ("step",), "step")
            before = expect(entry.get("before", ""), str, keys + ("before",), "before")
            if before not in after.get(step, []):
                raise SpecProblem(
                    keys,
                    f"a wrong order names a step and one it comes after in after "
                    f"({step!r} does not come after {before!r})",
                )
            wrong.append(
                {
                    "step": step,
                    "before": before,
                    "misconception": expect(
                        entry.get("misconception", ""), str, keys + ("misconception",), "misconception"
                    ),
                    "hint_html": optional_text(entry, "hint", keys, render),
                }
            )
        return wrong

    def _items(self, data: dict, key: str, render: Callable[[str, tuple], str]) -> list[dict]:
        allowed = {"id", "text", "explanation"} | ({"misconception"} if key == "distractors" else set())
        items = []
        for index, item in enumerate(expect(data.get(key, []), list, (key,), key)):
            keys = (key, index)
            expect(item, dict, keys, "each step" if key == "steps" else "each distractor")
            check_table_keys(item, allowed, keys, "step" if key == "steps" else "distractor")
            step_id = expect(item.get("id", ""), str, keys + ("id",), "id")
            if not _STEP_ID.match(step_id):
                raise SpecProblem(
                    keys + ("id",), "a step id must be lowercase letters, digits, - or _ (at most 32)"
                )
            text = expect(item.get("text", ""), str, keys + ("text",), "text")
            if not text.strip():
                raise SpecProblem(keys + ("text",), f"step {step_id!r} has an empty text")
            entry = {
                "id": step_id,
                "key": _form_key(step_id, text),
                "html": render(text, keys + ("text",)),
                "explanation_html": optional_text(item, "explanation", keys, render),
            }
            if key == "distractors":
                entry["misconception"] = expect(
                    item.get("misconception", ""), str, keys + ("misconception",), "misconception"
                )
            items.append(entry)
        return items

    def _after(self, data, step_ids: list[str], distractor_ids: set[str]) -> dict[str, list[str]]:
        table = expect(data["after"], dict, ("after",), "after")
        known = set(step_ids)

        def check(step_id: str, keys: tuple) -> None:
            if step_id in distractor_ids:
                raise SpecProblem(
                    keys, f"{step_id!r} is a distractor: it has no place in the order, so not in after"
                )
            if step_id not in known:
                raise SpecProblem(keys, f"after names an unknown step {step_id!r}")

        after: dict[str, list[str]] = {}
        for step_id, needs in table.items():
            check(step_id, ("after", step_id))
            expect(needs, list, ("after", step_id), f"after.{step_id} (the steps {step_id!r} comes after)")
            for index, need in enumerate(needs):
                expect(need, str, ("after", step_id, index), "a step id")
                check(need, ("after", step_id, index))
            if needs:
                # File order, each once: the feedback and the solution read them in that order.
                after[step_id] = [s for s in step_ids if s in needs]
        if not after:
            raise SpecProblem(
                ("after",), "after names no dependency: every order of the steps would be right"
            )
        if cycle := _find_cycle(step_ids, after):
            raise SpecProblem(
                ("after", cycle[1]),
                "the dependencies go round in a cycle, so no order is right: " + " → ".join(cycle),
            )
        return {s: after[s] for s in step_ids if s in after}

    # -- answering -------------------------------------------------------------------------
    def context(self, spec, seed):
        items = [
            {"id": i["id"], "key": i["key"], "html": i["html"], "text": html_to_text(i["html"])}
            for i in (*spec["steps"], *spec["distractors"])
        ]
        # Places 1..n count every item, distractors too: their number says nothing.
        return {"items": stable_shuffle(items, *seed), "places": list(range(1, len(items) + 1))}

    def answer_from_post(self, spec: dict, post: QueryDict) -> dict:
        items = [*spec["steps"], *spec["distractors"]]
        known = {f"step-{i['key']}" for i in items}
        if any(name.startswith("step-") and name not in known for name in post):
            raise AnswerError(_("unknown step"))
        places: dict[int, list[str]] = {}
        allowed = {str(place) for place in range(1, len(items) + 1)}
        for item in items:
            value = post.get(f"step-{item['key']}")
            if value is None:
                raise AnswerError(_("a step's place is missing"))
            if value == _UNUSED:
                continue
            if value not in allowed:
                raise AnswerError(_("a step's place is not one of the list"))
            places.setdefault(int(value), []).append(item["id"])
        doubled = [place for place, ids in sorted(places.items()) if len(ids) > 1]
        if doubled:
            # A slip the select form allows (not a tampered form): said, nothing stored.
            raise NotGradable(
                ngettext(
                    "Place %(places)s is given to more than one step. Give each place to one step only, "
                    "then check your answer.",
                    "Places %(places)s are given to more than one step. Give each place to one step "
                    "only, then check your answer.",
                    len(doubled),
                )
                % {"places": ", ".join(map(str, doubled))}
            )
        return {"order": [ids[0] for _place, ids in sorted(places.items())]}

    def clean_answer(self, spec, answer):
        if (
            not isinstance(answer, dict)
            or set(answer) != {"order"}
            or not isinstance(answer["order"], list)
            or not all(isinstance(step, str) for step in answer["order"])
        ):
            raise AnswerError(_('expected {"order": ["<step id>", …]}'))
        order = answer["order"]
        known = {i["id"] for i in (*spec["steps"], *spec["distractors"])}
        if not set(order) <= known:
            raise AnswerError(_("unknown step"))
        if len(set(order)) != len(order):
            raise AnswerError(_("a step was sent twice"))
        if not order:
            raise NotGradable(_("Put at least one step in order, then check your answer."))
        return {"order": list(order)}

    def grade(self, spec: dict, answer: dict) -> Grade:
        """Each step used is marked: a distractor is wrong; a step is right unless a step it
        depends on comes after it. Steps left out are wrong. The score is the share of the
        steps placed right, less one step for each distractor used (never below 0)."""
        order = answer["order"]
        place = {step_id: index for index, step_id in enumerate(order)}
        distractors = {d["id"]: d for d in spec["distractors"]}
        feedback: list[dict] = []
        misconceptions = []
        for index, step_id in enumerate(order):
            entry: dict = {"step": step_id, "place": index + 1}
            if step_id in distractors:
                entry.update(correct=False, problem="distractor")
                if distractors[step_id]["misconception"]:
                    misconceptions.append(distractors[step_id]["misconception"])
            else:
                # Every step it needs, directly or through others, that is in the order must come
                # before it: a step placed ahead of one it needs only through a step left out is
                # not right either (the step left out is counted as missing).
                late = [need for need in _needs(spec["after"], step_id) if place.get(need, -1) > index]
                known = [
                    w for w in spec.get("wrong_orders", []) if w["step"] == step_id and w["before"] in late
                ]
                if late:
                    # A known wrong order first (it has a hint), else the step furthest out of place.
                    needs = known[0]["before"] if known else max(late, key=place.__getitem__)
                    entry.update(correct=False, problem="before", needs=needs)
                    misconceptions += [w["misconception"] for w in known if w["misconception"]]
                else:
                    entry["correct"] = True
            feedback.append(entry)
        for step in spec["steps"]:
            if step["id"] not in place:
                feedback.append({"step": step["id"], "place": None, "correct": False, "problem": "missing"})
        right = sum(1 for e in feedback if e["correct"])
        used_distractors = sum(1 for e in feedback if e.get("problem") == "distractor")
        steps = len(spec["steps"])
        return Grade(
            score=round(max(0, right - used_distractors) / steps, 4),
            correct=right == steps and not used_distractors,
            feedback=feedback,
            misconceptions=misconceptions,
        )

    # -- feedback --------------------------------------------------------------------------
    def _by_id(self, spec) -> dict[str, dict]:
        return {i["id"]: i for i in (*spec["steps"], *spec["distractors"])}

    def _problem(self, spec, entry: dict) -> str:
        """One sentence on what is wrong with one step of the answer (HTML)."""
        items = self._by_id(spec)
        step = _inline(items[entry["step"]]["html"])
        if entry["problem"] == "distractor":
            return _say(_g("The step «%(step)s» does not belong to this computation."), step=step)
        if entry["problem"] == "missing":
            return _say(_g("The step «%(step)s» is missing from your order."), step=step)
        return _say(
            _g("The step «%(step)s» comes before the step «%(needs)s», but it needs its result."),
            step=step,
            needs=_inline(items[entry["needs"]]["html"]),
        )

    def _hint(self, spec, entry: dict) -> str:
        """The author's hint for a known wrong order, when this problem is one (HTML)."""
        return next(
            (
                w["hint_html"]
                for w in spec.get("wrong_orders", [])
                if entry.get("problem") == "before"
                and (w["step"], w["before"]) == (entry["step"], entry["needs"])
            ),
            "",
        )

    def withheld_feedback(self, spec, answer, grade_feedback):
        # Marks per step would give the order away: until the last attempt or the answer is
        # shown, only the first problem reading from the top (with a distractor's explanation),
        # and how many others there are.
        wrong = [entry for entry in grade_feedback if not entry.get("correct")]
        if not wrong:
            return None
        first = wrong[0]
        items = self._by_id(spec)
        shown = [
            {
                "correct": False,
                "label_html": self._problem(spec, first),
                "html": items[first["step"]]["explanation_html"] if first["problem"] == "distractor" else "",
                "hint_html": self._hint(spec, first),
            }
        ]
        if len(wrong) > 1:
            more = len(wrong) - 1
            note = ngettext(
                "%(n)d more step is not right yet.", "%(n)d more steps are not right yet.", more
            ) % {"n": more}
            shown.append({"correct": False, "label_html": escape(note), "html": "", "hint_html": ""})
        return shown

    def feedback_items(self, spec, answer, grade_feedback):
        items = self._by_id(spec)
        shown = []
        for entry in grade_feedback:
            if entry.get("step") not in items or entry.get("needs", entry["step"]) not in items:
                continue  # the question changed since this answer
            step = items[entry["step"]]
            place = f"{entry['place']}. " if entry.get("place") else "— "
            if entry["correct"]:
                shown.append(
                    {
                        "correct": True,
                        "label_html": place + _inline(step["html"]),
                        "html": step["explanation_html"],
                        "hint_html": "",
                    }
                )
                continue
            shown.append(
                {
                    "correct": False,
                    "label_html": place + self._problem(spec, entry),
                    "html": step["explanation_html"] if entry["problem"] == "distractor" else "",
                    "hint_html": self._hint(spec, entry),
                }
            )
        return shown

    def solution_items(self, spec):
        items = self._by_id(spec)
        shown = [
            {"label_html": f"{n}. {_inline(items[s]['html'])}", "html": items[s]["explanation_html"]}
            for n, s in enumerate(spec["solution"], start=1)
        ]
        free = _free_pairs([s["id"] for s in spec["steps"]], spec["after"])
        if free:
            pairs = "; ".join(
                _say(_g("«%(a)s» and «%(b)s»"), a=_inline(items[a]["html"]), b=_inline(items[b]["html"]))
                for a, b in free
            )
            # Shown only when there are free pairs, so always two orders or more.
            note = _g(
                "This is one of %(n)d right orders: steps that do not depend on each other may change places."
            ) % {"n": spec["orders"]}
            shown.append({"label_html": escape(note), "html": pairs})
        for distractor in spec["distractors"]:
            shown.append(
                {
                    "label_html": _say(_g("Not used: «%(step)s»"), step=_inline(distractor["html"])),
                    "html": distractor["explanation_html"],
                }
            )
        return shown

    def misconception_hints(self, spec):
        # A wrong order's hint, and a distractor's explanation: what its student should read.
        hints = super().misconception_hints(spec)
        for distractor in spec["distractors"]:
            if distractor["misconception"] and distractor["explanation_html"]:
                hints.setdefault(distractor["misconception"], distractor["explanation_html"])
        return hints

    # -- statistics ------------------------------------------------------------------------
    stats_template = "instructors/kinds/ordering.html"

    def choice_keys(self, spec: dict, answered: Answered) -> list[Hashable]:
        return list(self._keys(answered))

    def _keys(self, answered: Answered) -> list[tuple]:
        """The order given, and each mistake in it: ("order", ids), ("before", step, needs),
        ("distractor", id), ("missing", id)."""
        order = ((answered.answer or {}).get("order")) or []
        keys: list[tuple] = [("order", tuple(order))]
        for entry in answered.feedback or []:
            if isinstance(entry, dict) and not entry.get("correct") and entry.get("problem"):
                if entry["problem"] == "before":
                    keys.append(("before", entry.get("step"), entry.get("needs")))
                else:
                    keys.append((entry["problem"], entry.get("step")))
        return keys

    def describe(self, spec, key):
        items = self._by_id(spec)

        def text(step_id) -> str:
            return html_to_text(items[step_id]["html"]) if step_id in items else str(step_id)

        if key[0] == "order":
            ids = list(key[1])
            right = _is_valid_order(ids, [s["id"] for s in spec["steps"]], spec["after"])
            return Choice(" → ".join(text(i) for i in ids), correct=right)
        if key[0] == "before":
            return Choice(_g("«%(step)s» before «%(needs)s»") % {"step": text(key[1]), "needs": text(key[2])})
        if key[0] == "distractor":
            return Choice(_g("«%(step)s» used") % {"step": text(key[1])})
        return Choice(_g("«%(step)s» left out") % {"step": text(key[1])})

    def answer_stats(self, spec: dict, answers: Iterable[Answered]) -> dict:
        orders: Counter = Counter()
        mistakes: Counter = Counter()
        for answered in answers:
            for key in self._keys(answered):
                (orders if key[0] == "order" else mistakes)[key] += 1
        return {
            "orders": [(self.describe(spec, k), n) for k, n in orders.most_common(8)],
            "mistakes": [(self.describe(spec, k), n) for k, n in mistakes.most_common(10)],
        }


# -- the dependency graph ------------------------------------------------------------------


def _find_cycle(step_ids: list[str], after: dict[str, list[str]]) -> list[str]:
    """A cycle of the graph as its steps with the first again at the end; [] when none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(step_id: str) -> list[str]:
        state[step_id] = 1
        path.append(step_id)
        for need in after.get(step_id, []):
            if state.get(need) == 1:
                return [*path[path.index(need) :], need]
            if need not in state and (found := visit(need)):
                return found
        path.pop()
        state[step_id] = 2
        return []

    for step_id in step_ids:
        if step_id not in state and (found := visit(step_id)):
            # Read in the order things happen: each step after the one before it.
            return list(reversed(found))
    return []


def _topological_order(step_ids: list[str], after: dict[str, list[str]]) -> list[str]:
    """A right order: the earliest step in file order whose dependencies are all placed."""
    order: list[str] = []
    while len(order) < len(step_ids):
        order.append(
            next(s for s in step_ids if s not in order and all(n in order for n in after.get(s, [])))
        )
    return order


def _count_orders(step_ids: list[str], after: dict[str, list[str]]) -> int:
    """How many orders are right (linear extensions), over subsets of at most 12 steps."""
    bit = {s: 1 << i for i, s in enumerate(step_ids)}
    needs = [sum(bit[n] for n in after.get(s, [])) for s in step_ids]
    ways = [0] * (1 << len(step_ids))
    ways[0] = 1
    for placed in range(len(ways)):
        if ways[placed]:
            for index, mask in enumerate(needs):
                if not placed & (1 << index) and placed & mask == mask:
                    ways[placed | (1 << index)] += ways[placed]
    return ways[-1]


def _free_pairs(step_ids: list[str], after: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Pairs of steps with no path between them: either may come first."""
    before: dict[str, set[str]] = {}
    for step_id in _topological_order(step_ids, after):
        before[step_id] = set(after.get(step_id, []))
        for need in after.get(step_id, []):
            before[step_id] |= before[need]
    return [(a, b) for a, b in combinations(step_ids, 2) if a not in before[b] and b not in before[a]]


def _is_valid_order(order: list[str], step_ids: list[str], after: dict[str, list[str]]) -> bool:
    if sorted(order) != sorted(step_ids):
        return False
    place = {s: i for i, s in enumerate(order)}
    return all(place[n] < place[s] for s, needs in after.items() for n in needs)
