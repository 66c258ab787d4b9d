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
def python_literal(value: Any) -> str:
    """A value as code: numbers and lists as Python literals, strings as they are."""
    return value if isinstance(value, str) else repr(value)


def _number_text(value: float | int, in_math: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        text = str(value)
    elif math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        text = str(int(value))
    else:
        text = f"{value:.6g}"
        if "e" in text:
            mantissa, exponent = text.split("e")
            text = (
                rf"{mantissa} \times 10^{{{int(exponent)}}}" if in_math else f"{mantissa}·10^{int(exponent)}"
            )
    if text.startswith("-") and not in_math:
        text = "\u2212" + text[1:]
    return text.replace(".", "{,}" if in_math else ",")


def _latex(value: Any) -> str:
    if isinstance(value, list):
        rows = value if value and all(isinstance(row, list) for row in value) else [value]
        body = r" \\ ".join(" & ".join(_latex(cell) for cell in row) for row in rows)
        return rf"\begin{{bmatrix}} {body} \end{{bmatrix}}"
    if isinstance(value, (int, float)):
        return _number_text(value, True)
    return str(value)


def _math_toggles(text: str) -> list[int]:
    """Positions where ``$`` or ``$$`` opens or closes math (not escaped ``\\$``)."""
    positions = []
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "$":
            positions.append(i)
            i += 2 if text.startswith("$$", i) else 1
            continue
        i += 1
    return positions


def fill_markdown(text: str, params: dict, keys: tuple = ()) -> str:
    toggles = _math_toggles(text)

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in params:
            raise MissingParameter(name, keys)
        value = params[name]
        in_math = sum(1 for p in toggles if p < match.start()) % 2 == 1
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return _latex(value) if in_math else f"${_latex(value)}$"
        return _number_text(value, in_math)

    return PLACEHOLDER.sub(replace, text)


def fill_code(text: str, params: dict, keys: tuple = ()) -> str:
    def replace(match: re.Match) -> str:
        if match.group(1) not in params:
            raise MissingParameter(match.group(1), keys)
        return python_literal(params[match.group(1)])

    return PLACEHOLDER.sub(replace, text)


def fill_table(data: Any, params: dict, kind, keys: tuple = ()) -> Any:
    """A copy of a question's table with every placeholder filled in from ``params``; ``kind``
    says which keys hold Markdown and which code."""
    if isinstance(data, dict):
        return {k: fill_table(v, params, kind, keys + (k,)) for k, v in data.items()}
    if isinstance(data, list):
        return [fill_table(v, params, kind, keys + (i,)) for i, v in enumerate(data)]
    if not isinstance(data, str) or "{{" not in data:
        return data
    name_key = next((k for k in reversed(keys) if isinstance(k, str)), "")
    if name_key in kind.markdown_keys:
        return fill_markdown(data, params, keys)
    whole = WHOLE.match(data)
    if whole and name_key not in kind.code_keys:
        if whole.group(1) not in params:
            raise MissingParameter(whole.group(1), keys)
        return params[whole.group(1)]
    return fill_code(data, params, keys)


def same_answer_key(spec: dict) -> Any:
    """What makes two variants of a numeric question "the same answer" (the value, rounded
    to its tolerance); None for other kinds."""
    answer = spec.get("answer")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return round(float(answer), 9)
    return None
