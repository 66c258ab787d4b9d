"""Per-student variants of an item: seeds, who gets which variant, and parameters in text.

An item with a generator (``params = "name"`` naming ``name(rng)`` in the lesson's ``params.py``;
an exercise's ``cases.py`` with ``variants = N``) has N variants, computed once at import. A
student is given variant ``index_for(salt, user, item, N)``: a stable hash, never a seed or
index from a URL, so nobody can ask for someone else's variant.

Parameters enter a question's table as ``{{ name }}``:

- in Markdown keys (prompt, explanation, option text, hints, …) numbers are written the
  Turkish way (``0,5``; ``0{,}5`` inside math) and lists become a ``bmatrix`` (wrapped in
  ``$…$`` when not already inside math);
- in code keys (``fill_in``'s template, blank answers and patterns) a placeholder becomes the
  value's Python literal (``np.array({{ Q }})``);
- any other string that is exactly one placeholder becomes the value itself
  (``answer = "{{ score }}"`` is the number, a case input ``Q = "{{ Q }}"`` the matrix);
  otherwise its placeholders are filled in as Python literals.
"""

import hashlib
import math
import re
import secrets
from typing import Any

DEFAULT_VARIANTS = 20
MAX_VARIANTS = 200
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
WHOLE = re.compile(r"^\s*\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\s*$")


class MissingParameter(KeyError):
    """A placeholder names a parameter the generator did not return."""

    def __init__(self, name: str, keys: tuple):
        super().__init__(name)
        self.name = name
        self.keys = keys


def new_salt() -> str:
    return secrets.token_hex(16)


def _digest(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:8], "big")


def variant_seed(base: int, index: int) -> int:
    """The seed of variant ``index``: variant 0 keeps ``base`` (what the item used before it had
    variants), the others are spread from it."""
    return int(base) if index == 0 else _digest("variant", base, index) >> 1


def question_seed_base(slug: str) -> int:
    return _digest("question", slug) >> 33


def item_key(item) -> str:
    """A question and an exercise may share a slug; their variants must not."""
    return ("e:" if item.is_exercise else "q:") + item.slug


def index_for(salt: str, user_id: int, key: str, count: int) -> int:
    """Which of ``count`` variants of the item ``key`` a student has: stable for the course."""
    if count <= 1:
        return 0
    return _digest(salt, user_id, key) % count


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


# -- filling a question table in ------------------------------------------------------------
# A matrix is for reading: one that large in a question's text is a mistake, and would make
# every variant's page heavy.
MAX_SHOWN_CELLS = 400
_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


class ParameterTooLarge(ValueError):
    """A parameter shown in a question's text is larger than a reader can take in."""


def python_literal(value: Any) -> str:
    """A value as code: numbers and lists as Python literals, strings as they are."""
    return value if isinstance(value, str) else repr(value)


def _number_text(value: float | int, in_math: bool) -> str:
    if isinstance(value, bool):
        return "doğru" if value else "yanlış"
    if isinstance(value, int):
        text = str(value)
    elif math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        text = str(int(value))
    else:
        text = repr(value) if "e" not in repr(value) and len(repr(value)) <= 12 else f"{value:.6g}"
        if "e" in text:
            mantissa, exponent = text.split("e")
            text = (
                rf"{mantissa} \times 10^{{{int(exponent)}}}"
                if in_math
                else f"{mantissa}·10{str(int(exponent)).translate(_SUPERSCRIPT)}"
            )
    if text.startswith("-") and not in_math:
        text = "\u2212" + text[1:]
    return text.replace(".", "{,}" if in_math else ",")


def _cells(value: Any) -> int:
    return sum(_cells(v) for v in value) if isinstance(value, list) else 1


def _latex(value: Any) -> str:
    if isinstance(value, list):
        if not value:
            return r"\begin{bmatrix} \end{bmatrix}"
        rows = value if all(isinstance(row, list) for row in value) else [value]
        body = r" \\ ".join(" & ".join(_latex(cell) for cell in row) for row in rows)
        return rf"\begin{{bmatrix}} {body} \end{{bmatrix}}"
    if isinstance(value, (int, float)):
        return _number_text(value, True)
    return str(value)


_FENCE = re.compile(r"^[ \t]*(```+|~~~+)", re.MULTILINE)


def _regions(text: str) -> list[str]:
    """What each character of Markdown ``text`` is: "t" text, "m" math, "c" code (a code
    span or a fenced block, where ``$`` is no math)."""
    kinds = ["t"] * len(text)
    # Fenced blocks first: from a fence line to the next fence of the same kind (or the end).
    fences = list(_FENCE.finditer(text))
    i = 0
    while i < len(fences):
        opening = fences[i]
        closing = next((f for f in fences[i + 1 :] if f.group(1)[0] == opening.group(1)[0]), None)
        end = text.find("\n", closing.end()) if closing else len(text)
        end = len(text) if end == -1 else end
        for k in range(opening.start(), end):
            kinds[k] = "c"
        i = fences.index(closing) + 1 if closing else len(fences)
    # Then inline code spans and math, left to right, outside fenced blocks.
    i, in_math = 0, False
    while i < len(text):
        if kinds[i] == "c":
            i += 1
            continue
        char = text[i]
        if char == "\\" and not in_math:
            i += 2
            continue
        if char == "`" and not in_math:
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            close = text.find("`" * run, i + run)
            if close != -1:
                for k in range(i, close + run):
                    kinds[k] = "c"
                i = close + run
                continue
        if char == "\\":  # inside math: \$ is a dollar sign, \\ a line break
            kinds[i] = "m"
            i += 2
            continue
        if char == "$":
            width = 2 if text.startswith("$$", i) else 1
            in_math = not in_math
            for k in range(i, i + width):
                kinds[k] = "m"
            i += width
            continue
        kinds[i] = "m" if in_math else "t"
        i += 1
    return kinds


def fill_markdown(text: str, params: dict, keys: tuple = ()) -> str:
    kinds = _regions(text)

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in params:
            raise MissingParameter(name, keys)
        value = params[name]
        where = kinds[match.start()]
        if where == "c":
            return python_literal(value)  # code in the text reads as code
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            if _cells(value) > MAX_SHOWN_CELLS:
                raise ParameterTooLarge(
                    f"{{{{ {name} }}}} has {_cells(value)} numbers: at most {MAX_SHOWN_CELLS} are shown in a question's text"
                )
            return _latex(value) if where == "m" else f"${_latex(value)}$"
        return _number_text(value, where == "m")

    return PLACEHOLDER.sub(replace, text)


def fill_code(text: str, params: dict, keys: tuple = ()) -> str:
    def replace(match: re.Match) -> str:
        if match.group(1) not in params:
            raise MissingParameter(match.group(1), keys)
        return python_literal(params[match.group(1)])

    return PLACEHOLDER.sub(replace, text)


def _is_case_input(keys: tuple) -> bool:
    """``cases[i].inputs.<name>``: a value the code runs on, whatever its name."""
    return len(keys) >= 4 and keys[0] == "cases" and keys[2] == "inputs"


def fill_table(data: Any, params: dict, kind, keys: tuple = ()) -> Any:
    """A copy of a question's table with every placeholder filled in from ``params``; ``kind``
    says which keys hold Markdown and which code (by the key's own name; a code blank's case
    inputs are values whatever they are called)."""
    if isinstance(data, dict):
        return {k: fill_table(v, params, kind, keys + (k,)) for k, v in data.items()}
    if isinstance(data, list):
        return [fill_table(v, params, kind, keys + (i,)) for i, v in enumerate(data)]
    if not isinstance(data, str) or "{{" not in data:
        return data
    whole = WHOLE.match(data)
    if _is_case_input(keys):
        if whole:
            if whole.group(1) not in params:
                raise MissingParameter(whole.group(1), keys)
            return params[whole.group(1)]
        return fill_code(data, params, keys)
    name_key = next((k for k in reversed(keys) if isinstance(k, str)), "")
    if name_key in kind.markdown_keys:
        return fill_markdown(data, params, keys)
    if whole and name_key not in kind.code_keys:
        if whole.group(1) not in params:
            raise MissingParameter(whole.group(1), keys)
        return params[whole.group(1)]
    return fill_code(data, params, keys)


def shared_answers(specs: list[dict]) -> list[list[int]]:
    """Groups of variants (their positions in ``specs``) of a numeric question whose answers one
    typed number would get right in each: within the question's tolerance (absolute, or
    relative when it says so) of each other. Other kinds have none."""
    answers = []
    for index, spec in enumerate(specs):
        answer = spec.get("answer")
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            tolerance = float(spec.get("tolerance") or 0.0)
            if spec.get("relative"):
                tolerance *= abs(float(answer))
            answers.append((float(answer), tolerance, index))
    answers.sort()
    groups: list[list[int]] = []
    for position, (value, tolerance, index) in enumerate(answers):
        if position and value - answers[position - 1][0] <= max(tolerance, answers[position - 1][1]) * 2:
            groups[-1].append(index)
        else:
            groups.append([index])
    return [sorted(group) for group in groups if len(group) > 1]
