"""Code fill-in: blanks in a code template, graded by running the filled code.

Code blanks run in the grader's sandbox on hidden inputs and the named variables are
compared with the reference filling outside it, so any equivalent expression passes
(``K.T``, ``K.transpose()``, ``np.swapaxes(K, -1, -2)`` …). Blanks that are not code are
checked against accept-lists (exact, case-insensitive or regular expression).
"""

import ast
import re

from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .base import (
    AnswerError,
    Choice,
    Grade,
    GraderFailed,
    NotGradable,
    QuestionKind,
    SpecProblem,
    check_table_keys,
    expect,
    optional_text,
    register,
)
from .forms import FillInForm

BLANK = re.compile(r"_{4,}")
MODES = ("code", "exact", "nocase", "regex")
MAX_BLANK_CHARS = 200
# Small limits: a blank is one expression on a few small arrays.
FILL_IN_LIMITS = {"cpu_seconds": 2, "wall_seconds": 5, "memory_mb": 256}


def _expression_dump(text: str) -> str | None:
    try:
        return ast.dump(ast.parse(text.strip(), mode="eval"))
    except SyntaxError:
        return None


def fill(code: str, values: list[str]) -> str:
    parts = BLANK.split(code)
    return "".join(part + (values[i] if i < len(values) else "") for i, part in enumerate(parts))


def _as_expression(text: str) -> str:
    """A code blank as it goes into the program: one parenthesised expression, so an answer is
    graded as what it evaluates to, whatever operators surround the blank (``Q @ ____`` runs
    ``Q @ (K if c else K.T)``, never ``(Q @ K) if c else K.T``). Unparsing drops comments,
    which would swallow the closing parenthesis."""
    return f"({ast.unparse(ast.parse(text.strip(), mode='eval'))})"


def program(spec: dict, values: list[str]) -> str:
    """The code a run executes: the template with each blank filled in, code blanks as one expression."""
    return fill(
        spec["code"],
        [
            _as_expression(value) if blank["mode"] == "code" else value
            for value, blank in zip(values, spec["blanks"])
        ],
    )


@register
class FillIn(QuestionKind):
    name = "fill_in"
    label = gettext_lazy("fill in the blanks")
    keys = {"code", "blanks", "check", "cases", "rtol", "atol"}
    required = {"code", "blanks"}
    code_keys = frozenset({"code", "answer", "accept", "pattern", "check"})

    def authoring_form(self):
        return FillInForm

    def validate(self, data, render):
        self.check_keys(data)
        code = expect(data["code"], str, ("code",), "code")
        count = len(BLANK.findall(code))
        blanks = expect(data["blanks"], list, ("blanks",), "blanks")
        if count == 0:
            raise SpecProblem(
                ("code",), "code has no blank: mark each blank with ____ (four or more underscores)"
            )
        if count != len(blanks):
            raise SpecProblem(("blanks",), f"code has {count} blank(s) but {len(blanks)} [[blanks]] table(s)")
        out = []
        for index, blank in enumerate(blanks):
            keys = ("blanks", index)
            expect(blank, dict, keys, "each blank")
            check_table_keys(blank, {"answer", "mode", "accept", "wrong", "label"}, keys, "blank")
            answer = expect(blank.get("answer", ""), str, keys + ("answer",), "answer").strip()
            mode = expect(blank.get("mode", "code"), str, keys + ("mode",), "mode")
            if mode not in MODES:
                raise SpecProblem(keys + ("mode",), f"mode must be one of {', '.join(MODES)}")
            if not answer:
                raise SpecProblem(keys + ("answer",), "every blank needs its reference answer")
            if mode == "code" and _expression_dump(answer) is None:
                raise SpecProblem(
                    keys + ("answer",), f"reference answer {answer!r} is not a single Python expression"
                )
            accept = [
                expect(a, str, keys + ("accept", i), "accepted answer")
                for i, a in enumerate(blank.get("accept", []))
            ]
            if mode == "code" and accept:
                raise SpecProblem(
                    keys + ("accept",),
                    "code blanks are graded by running them; accept lists are for exact/nocase/regex blanks",
                )
            if mode == "regex":
                for i, pattern in enumerate([answer] + accept):
                    try:
                        re.compile(pattern)
                    except re.error as exc:
                        raise SpecProblem(
                            keys + ("accept", i - 1) if i else keys + ("answer",),
                            f"invalid regular expression: {exc}",
                        ) from None
            wrong = []
            for w_index, entry in enumerate(blank.get("wrong", [])):
                w_keys = keys + ("wrong", w_index)
                expect(entry, dict, w_keys, "each wrong pattern")
                check_table_keys(entry, {"pattern", "misconception", "hint"}, w_keys, "wrong pattern")
                pattern = expect(entry.get("pattern", ""), str, w_keys + ("pattern",), "pattern")
                if mode == "code" and _expression_dump(pattern) is None:
                    raise SpecProblem(
                        w_keys + ("pattern",), f"wrong pattern {pattern!r} is not a Python expression"
                    )
                wrong.append(
                    {
                        "pattern": pattern,
                        "misconception": expect(
                            entry.get("misconception", ""), str, w_keys + ("misconception",), "misconception"
                        ),
                        "hint_html": optional_text(entry, "hint", w_keys, render),
                    }
                )
            out.append(
                {
                    "answer": answer,
                    "mode": mode,
                    "accept": accept,
                    "wrong": wrong,
                    "label": expect(blank.get("label", ""), str, keys + ("label",), "label"),
                }
            )
        spec = {"code": code, "blanks": out, "grader": None}
        if any(b["mode"] == "code" for b in out):
            check = expect(data.get("check", []), list, ("check",), "check")
            if not check:
                raise SpecProblem(
                    ("check",),
                    'code blanks need check = ["variable", …]: the variables compared after running',
                )
            cases = expect(data.get("cases", []), list, ("cases",), "cases")
            if not cases:
                raise SpecProblem(("cases",), "code blanks need [[cases]] with the inputs the code runs on")
            spec["grader"] = {
                "kind": "script",
                "results": check,
                "cases": [{"hidden": True, **case} for case in cases],
                "limits": FILL_IN_LIMITS,
                **{key: data[key] for key in ("rtol", "atol") if key in data},
            }
            from grader.core import SpecError, parse_spec

            try:
                parse_spec(spec["grader"])
            except SpecError as exc:
                key = tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", exc.key) if p)
                key = tuple("check" if p == "results" else p for p in key)
                raise SpecProblem(key, exc.message) from None
            if _compiles(fill(code, [b["answer"] for b in out])) and not _compiles(_reference_code(spec)):
                raise SpecProblem(
                    ("code",),
                    "a code blank must stand where an expression can: it is filled in "
                    "as one parenthesised expression, like Q @ (K.T)",
                )
        return spec

    # -- answering ---------------------------------------------------------------------
    def context(self, spec, seed):
        parts = BLANK.split(spec["code"])
        return {
            "parts": parts,
            "blanks": [{"index": i, "label": b["label"]} for i, b in enumerate(spec["blanks"])],
        }

    def answer_from_post(self, spec, post):
        return {"blanks": [post.get(f"blank-{i}", "") for i in range(len(spec["blanks"]))]}

    def clean_answer(self, spec, answer):
        if (
            not isinstance(answer, dict)
            or set(answer) != {"blanks"}
            or not isinstance(answer["blanks"], list)
        ):
            raise AnswerError(gettext_lazy('expected {"blanks": ["…", …]}'))
        blanks = answer["blanks"]
        if len(blanks) != len(spec["blanks"]) or not all(isinstance(b, str) for b in blanks):
            raise AnswerError(gettext_lazy("one text per blank is expected"))
        for index, text in enumerate(blanks):
            if len(text) > MAX_BLANK_CHARS:  # the form allows no more: never stored, nor run
                raise AnswerError(
                    _("blank %(n)d is %(size)s characters long; the limit is %(limit)s")
                    % {
                        "n": index + 1,
                        "size": number_format(len(text), force_grouping=True),
                        "limit": MAX_BLANK_CHARS,
                    }
                )
        cleaned = [b.strip() for b in blanks]
        for index, (text, blank) in enumerate(zip(cleaned, spec["blanks"])):
            if not text:
                raise NotGradable(_("Blank %(n)d is empty: fill in every blank.") % {"n": index + 1})
            if blank["mode"] == "code" and ("\n" in text or _expression_dump(text) is None):
                raise NotGradable(
                    _(
                        "Blank %(n)d must be a single Python expression, such as K.T — not a statement "
                        "or several lines. This try was not counted."
                    )
                    % {"n": index + 1}
                )
        return {"blanks": cleaned}

    def grade(self, spec, answer):
        texts = answer["blanks"]
        results = [None] * len(texts)
        for index, (text, blank) in enumerate(zip(texts, spec["blanks"])):
            if blank["mode"] != "code":
                results[index] = {"correct": _accepts(blank, text), "message": None}
        code_indices = [i for i, b in enumerate(spec["blanks"]) if b["mode"] == "code"]
        if code_indices:
            self._grade_code(spec, texts, code_indices, results)
        feedback, misconceptions = [], []
        for index, (text, blank, result) in enumerate(zip(texts, spec["blanks"], results)):
            hint = ""
            if not result["correct"]:
                for wrong in blank["wrong"]:
                    if _matches(blank["mode"], wrong["pattern"], text):
                        hint = wrong["hint_html"]
                        if wrong["misconception"]:
                            misconceptions.append(wrong["misconception"])
                        break
            feedback.append(
                {
                    "blank": index,
                    "text": text,
                    "correct": result["correct"],
                    "message": result["message"],
                    "hint_html": hint,
                }
            )
        right = sum(f["correct"] for f in feedback)
        return Grade(
            score=round(right / len(feedback), 4),
            correct=right == len(feedback),
            feedback=feedback,
            misconceptions=misconceptions,
        )

    def code_runs(self, spec):
        # All code blanks together, then (when that fails) each one alone.
        code = sum(b["mode"] == "code" for b in spec["blanks"]) if spec.get("grader") else 0
        return 1 + code if code > 1 else code

    def _grade_code(self, spec, texts, code_indices, results):
        from grader.core import SandboxUnavailable, Verdict, grade

        grader_spec, cases, ref = _bundle(spec)
        reference = [b["answer"] for b in spec["blanks"]]

        def run(filled: list[str]):
            try:
                result = grade(program(spec, filled), grader_spec, cases, ref)
            except SandboxUnavailable as exc:
                raise GraderFailed(str(exc)) from exc
            if result.verdict == Verdict.INTERNAL_ERROR:
                raise GraderFailed(_first_message(result))
            return result

        # Run with every code blank as the student wrote it (other blanks take the reference).
        combined = run([texts[i] if i in code_indices else reference[i] for i in range(len(texts))])
        if combined.verdict == Verdict.PASSED or len(code_indices) == 1:
            message = None if combined.verdict == Verdict.PASSED else _first_message(combined)
            for i in code_indices:
                results[i] = {"correct": combined.verdict == Verdict.PASSED, "message": message}
            return
        # Several code blanks and a failure: try each one alone to say which is wrong.
        for i in code_indices:
            alone = run([texts[i] if j == i else reference[j] for j in range(len(texts))])
            ok = alone.verdict == Verdict.PASSED
            results[i] = {"correct": ok, "message": None if ok else _first_message(alone)}

    def feedback_items(self, spec, answer, grade_feedback):
        from django.utils.html import escape

        items = []
        for entry in grade_feedback:
            blank = spec["blanks"][entry["blank"]]
            label = escape(blank["label"] or _("Blank %(n)d") % {"n": entry["blank"] + 1})
            message = entry.get("message")
            items.append(
                {
                    "correct": entry["correct"],
                    "label_html": f"{label}: <code>{escape(entry['text'])}</code>",
                    "html": escape(_render_message(message)) if message else "",
                    "hint_html": entry.get("hint_html", ""),
                }
            )
        return items

    def solution_items(self, spec):
        from django.utils.html import escape

        filled = fill(spec["code"], [b["answer"] for b in spec["blanks"]])
        return [{"label_html": f"<code>{escape(filled)}</code>", "html": ""}]

    def prepare_grading(self, spec):
        prepare_reference(spec)

    # -- statistics: the most common wrong texts, blank by blank ---------------------------
    stats_template = "instructors/kinds/wrong_answers.html"

    def choice_keys(self, spec, answered):
        return [
            (entry.get("blank", 0), entry.get("text", ""))
            for entry in answered.feedback or []
            if not entry.get("correct")
        ]

    def describe(self, spec, key):
        index, text = key
        blank = spec["blanks"][index] if index < len(spec["blanks"]) else {}
        return Choice(text, part=blank.get("label") or _("Blank %(n)d") % {"n": index + 1})

    def shown_keys(self, spec, counts):
        return [key for key, _count in counts.most_common(10)]


def _accepts(blank: dict, text: str) -> bool:
    candidates = [blank["answer"], *blank["accept"]]
    return any(_matches(blank["mode"], candidate, text) for candidate in candidates)


def _matches(mode: str, pattern: str, text: str) -> bool:
    if mode == "code":
        return _expression_dump(pattern) == _expression_dump(text)
    if mode == "exact":
        return text.strip() == pattern.strip()
    if mode == "nocase":
        return text.strip().casefold() == pattern.strip().casefold()
    return re.fullmatch(pattern, text.strip()) is not None


def _first_message(result) -> dict | None:
    message = result.message or next((t.message for t in result.tests if not t.passed and t.message), None)
    return message.to_dict() if message else None


def _render_message(message: dict) -> str:
    from grader.core import Message

    return Message(message["msgid"], message["params"]).render(_)


def _bundle(spec: dict):
    import json

    from grader.bundles import bundle_path, content_hash, load, prepare

    digest = content_hash(json.dumps(spec["grader"], sort_keys=True, default=str), _reference_code(spec))
    target = bundle_path("fill-in", "all", digest[:2], digest)
    if not (target / "manifest.json").exists():
        prepare(spec["grader"], _reference_code(spec), source_dir=None, target=target)
    return load(spec["grader"], target)


def _reference_code(spec: dict) -> str:
    return program(spec, [b["answer"] for b in spec["blanks"]])


def _compiles(code: str) -> bool:
    try:
        compile(code, "<fill-in>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def prepare_reference(spec: dict) -> None:
    """Run the reference filling in the sandbox now (import/validate time); raises on failure."""
    if spec.get("grader"):
        _bundle(spec)
