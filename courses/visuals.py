"""Interactive figures placed in lessons with ``::: visual NAME`` … ``:::``.

Each visual is a function ``(lesson_dir) -> html`` registered under its name. It computes
its numbers with NumPy at import time (from data files kept in the lesson's folder), and
returns markup that reads on its own without JavaScript (a table, an SVG); the small
script in static/js/visuals.js makes it interactive. Raise VisualError for author mistakes.

The figures read ``toy.toml`` in the lesson folder (see courses/content/attention/
07-visual-attention/toy.toml for a commented example):

- ``features``: 2–4 names, one per embedding dimension; the first two name the blend plane.
- ``[embeddings]``: ``token = [numbers]`` for every token used in a sentence.
- ``[weights]``: ``W_q`` and ``W_k`` (features × d_k) and ``W_v`` (features × 2).
- ``[[sentences]]``: ``id``, ``label``, ``text``, ``tokens`` (2–10) and ``focus`` (one of them);
  used by ``heatmap`` (causal self-attention) and ``blend`` (focus + Σ a_j v_j).
- ``[rotate]``: ``keys`` (2–5 pairs), optional ``labels``, ``query_length`` (1), ``scaled``
  (false: softmax(q·k); true: ÷√2), ``start`` angle and the table's ``angles`` (degrees).
- ``[playground]`` (optional; without it the scaled-dot-product lesson's example): ``Q``, ``K``,
  ``V`` (at most 4×4) and ``causal``.
"""

import hashlib
import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .rendering import render_math
from .tomlsource import TomlSource, TomlSyntaxError

VISUALS: dict[str, Callable[[Path], str]] = {}


class VisualError(Exception):
    pass


def visual(name: str):
    def register(function: Callable[[Path], str]) -> Callable[[Path], str]:
        VISUALS[name] = function
        return function

    return register


def render_visual(name: str, lesson_dir: Path) -> tuple[str, str | None]:
    """(markup, problem) for the visual ``name`` in the lesson at ``lesson_dir``."""
    function = VISUALS.get(name)
    if function is None:
        known = ", ".join(sorted(VISUALS)) or "none yet"
        return "", f"unknown visual {name!r} (known: {known})"
    try:
        return function(lesson_dir), None
    except VisualError as exc:
        return "", f"visual {name!r}: {exc}"


# --- numbers ----------------------------------------------------------------------------
# The same arithmetic runs again in static/js/visuals.js; keep the two in step.


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax with the row maximum subtracted; -inf entries get weight 0."""
    scores = np.asarray(scores, dtype=float)
    shifted = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=-1, keepdims=True)


def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """True where query i may look at key j (j <= i)."""
    return np.tril(np.ones((n_q, n_q if n_k is None else n_k), dtype=bool))


def attention_steps(Q, K, V, *, causal: bool = False) -> dict[str, np.ndarray]:
    """Every intermediate of softmax(QKᵀ/√d_k)V: scores, scaled (masked), weights, output."""
    Q, K, V = (np.asarray(m, dtype=float) for m in (Q, K, V))
    scores = Q @ K.T
    scaled = scores / np.sqrt(Q.shape[-1])
    if causal:
        scaled = np.where(causal_mask(len(Q), len(K)), scaled, -np.inf)
    weights = softmax_rows(scaled)
    return {"scores": scores, "scaled": scaled, "weights": weights, "output": weights @ V}


def rotate_weights(keys, angle_degrees: float, *, length: float = 1.0, scaled: bool = False) -> np.ndarray:
    """softmax(q·k_j) for a 2-D query of ``length`` at ``angle_degrees`` (÷√2 if scaled)."""
    theta = np.deg2rad(angle_degrees)
    query = length * np.array([np.cos(theta), np.sin(theta)])
    scores = np.asarray(keys, dtype=float) @ query
    if scaled:
        scores = scores / np.sqrt(2)
    return softmax_rows(scores)


def fmt(value: float, digits: int = 3) -> str:
    """A number as the page shows it: fixed decimals, Turkish decimal comma, no '-0'."""
    value = float(value)
    if np.isinf(value):
        return "−∞" if value < 0 else "∞"
    rounded = round(value, digits)
    if rounded == 0:
        rounded = 0.0
    return f"{rounded:.{digits}f}".replace(".", ",")


def fmt_vector(vector, digits: int = 3) -> str:
    return "(" + "; ".join(fmt(x, digits) for x in vector) + ")"


# --- the toy model kept in the lesson folder ---------------------------------------------


@dataclass
class Sentence:
    id: str
    label: str
    text: str
    tokens: list[str]
    focus: int  # index of the highlighted word


@dataclass
class ToyModel:
    features: list[str]
    embeddings: dict[str, np.ndarray]
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    sentences: list[Sentence]
    doc: TomlSource

    def self_attention(self, sentence: Sentence) -> dict[str, np.ndarray]:
        """Causal self-attention of the sentence: X, Q, K, V and the weights."""
        X = np.array([self.embeddings[token] for token in sentence.tokens])
        Q, K, V = X @ self.W_q, X @ self.W_k, X @ self.W_v
        steps = attention_steps(Q, K, V, causal=True)
        return {"X": X, "Q": Q, "K": K, "V": V, **steps}


TOY_FILE = "toy.toml"


def _read_toy(lesson_dir: Path) -> TomlSource:
    path = lesson_dir / TOY_FILE
    if not path.is_file():
        raise VisualError(f"needs {TOY_FILE} in the lesson folder (see docs in courses/visuals.py)")
    try:
        return TomlSource.read(path)
    except TomlSyntaxError as exc:
        raise VisualError(f"{TOY_FILE} line {exc.line}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise VisualError(f"{TOY_FILE} is not valid UTF-8") from exc


def _where(doc: TomlSource, *keys) -> str:
    return f"{TOY_FILE} line {doc.line_of(*keys)}"


def _matrix(
    doc: TomlSource, value, keys: tuple, *, rows: int | None = None, cols: int | None = None
) -> np.ndarray:
    name = ".".join(str(k) for k in keys)
    try:
        matrix = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise VisualError(  # noqa: B904 -- the author needs our message, not NumPy's
            f"{_where(doc, *keys)}: {name} must be a table of numbers (a list of equal-length rows)"
        )
    if matrix.ndim != 2 or matrix.size == 0:
        raise VisualError(f"{_where(doc, *keys)}: {name} must be a list of equal-length rows of numbers")
    if not np.all(np.isfinite(matrix)):
        raise VisualError(f"{_where(doc, *keys)}: {name} must hold finite numbers")
    if rows is not None and matrix.shape[0] != rows:
        raise VisualError(f"{_where(doc, *keys)}: {name} needs {rows} rows, has {matrix.shape[0]}")
    if cols is not None and matrix.shape[1] != cols:
        raise VisualError(f"{_where(doc, *keys)}: {name} needs {cols} columns, has {matrix.shape[1]}")
    return matrix


def load_toy_model(lesson_dir: Path) -> ToyModel:
    """Read and check toy.toml's embeddings, W_q/W_k/W_v and sentences."""
    doc = _read_toy(lesson_dir)
    data = doc.data
    features = data.get("features")
    if (
        not isinstance(features, list)
        or not 2 <= len(features) <= 4
        or not all(isinstance(f, str) for f in features)
    ):
        raise VisualError(
            f"{_where(doc, 'features')}: features must list 2 to 4 names, one per embedding dimension"
        )
    d = len(features)
    table = data.get("embeddings")
    if not isinstance(table, dict) or not table:
        raise VisualError(f"{_where(doc, 'embeddings')}: needs an [embeddings] table (token = [numbers])")
    embeddings = {}
    for token, vector in table.items():
        row = _matrix(doc, [vector], ("embeddings", token), cols=d)
        embeddings[token] = row[0]
    weights = data.get("weights")
    if not isinstance(weights, dict):
        raise VisualError(f"{_where(doc, 'weights')}: needs a [weights] table with W_q, W_k and W_v")
    for name in ("W_q", "W_k", "W_v"):
        if name not in weights:
            raise VisualError(f"{_where(doc, 'weights')}: [weights] is missing {name}")
    W_q = _matrix(doc, weights["W_q"], ("weights", "W_q"), rows=d)
    W_k = _matrix(doc, weights["W_k"], ("weights", "W_k"), rows=d, cols=W_q.shape[1])
    W_v = _matrix(doc, weights["W_v"], ("weights", "W_v"), rows=d, cols=2)
    raw = data.get("sentences")
    if not isinstance(raw, list) or not raw:
        raise VisualError(f"{_where(doc, 'sentences')}: needs at least one [[sentences]] entry")
    sentences, seen = [], set()
    for index, entry in enumerate(raw):
        keys = ("sentences", index)
        if not isinstance(entry, dict):
            raise VisualError(f"{_where(doc, *keys)}: each [[sentences]] entry must be a table")
        missing = [k for k in ("id", "label", "tokens", "focus") if k not in entry]
        if missing:
            raise VisualError(f"{_where(doc, *keys)}: sentence {index + 1} is missing {', '.join(missing)}")
        tokens = entry["tokens"]
        if not isinstance(tokens, list) or not 2 <= len(tokens) <= 10:
            raise VisualError(f"{_where(doc, *keys, 'tokens')}: tokens must list 2 to 10 words")
        unknown = [t for t in tokens if t not in embeddings]
        if unknown:
            raise VisualError(
                f"{_where(doc, *keys, 'tokens')}: no embedding for {', '.join(map(repr, unknown))}"
            )
        if entry["focus"] not in tokens:
            raise VisualError(
                f"{_where(doc, *keys, 'focus')}: focus {entry['focus']!r} is not one of the tokens"
            )
        if entry["id"] in seen:
            raise VisualError(f"{_where(doc, *keys, 'id')}: sentence id {entry['id']!r} is used twice")
        seen.add(entry["id"])
        sentences.append(
            Sentence(
                id=str(entry["id"]),
                label=str(entry["label"]),
                text=str(entry.get("text", " ".join(tokens))),
                tokens=[str(t) for t in tokens],
                focus=tokens.index(entry["focus"]),
            )
        )
    return ToyModel(features, embeddings, W_q, W_k, W_v, sentences, doc)


# --- markup helpers -----------------------------------------------------------------------


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _uid(lesson_dir: Path, name: str) -> str:
    # Stable across imports (the lesson HTML only changes when its sources do), unique per
    # visual on a page.
    digest = hashlib.sha1(f"{lesson_dir.name}/{name}".encode()).hexdigest()[:6]
    return f"v-{name}-{digest}"


def _math(latex: str) -> str:
    mathml, problem = render_math(latex, display=False)
    if problem:  # our own formulas: a mistake here is a bug, not an author's problem
        raise RuntimeError(problem)
    return mathml


def _json_block(uid: str, data) -> str:
    # "</" cannot appear inside the JSON text, so the block cannot end early.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" class="visual-data" id="{uid}-data">{text}</script>'


def _n(x: float) -> str:
    """A coordinate for SVG attributes."""
    return f"{float(x):.1f}".rstrip("0").rstrip(".")


def _arrow(x1, y1, x2, y2, cls: str, head: float = 9.0, extra: str = "") -> str:
    dx, dy = x2 - x1, y2 - y1
    length = float(np.hypot(dx, dy))
    if length < 1e-6:
        return ""
    ux, uy = dx / length, dy / length
    head = min(head, length * 0.6)
    bx, by = x2 - ux * head, y2 - uy * head
    px, py = -uy * head * 0.45, ux * head * 0.45
    points = f"{_n(x2)},{_n(y2)} {_n(bx + px)},{_n(by + py)} {_n(bx - px)},{_n(by - py)}"
    return (
        f'<g class="arrow {cls}"{extra}><line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(bx)}" y2="{_n(by)}"/>'
        f'<polygon points="{points}"/></g>'
    )


def _shade(weight: float) -> int:
    """Heat bucket 0..10 for a weight; CSS colours the buckets (no style attributes)."""
    return int(np.clip(np.rint(weight * 10), 0, 10))


def _choice_group(uid: str, legend: str, sentences: list[Sentence]) -> str:
    options = "".join(
        f'<label class="choice"><input type="radio" name="{uid}-sentence" value="{_e(s.id)}"'
        f"{' checked' if i == 0 else ''}> {_e(s.label)}</label>"
        for i, s in enumerate(sentences)
    )
    return f'<fieldset class="choice-group"><legend>{_e(legend)}</legend>{options}</fieldset>'


# --- heatmap: who looks at whom, with the causal rule ------------------------------------


def _heatmap_readout(sentence: Sentence, weights: np.ndarray, row: int) -> str:
    token = sentence.tokens[row]
    visible = weights[row, : row + 1]
    best = int(np.argmax(visible))
    later = sentence.tokens[row + 1 :]
    if row == 0:
        text = f"“{token}” satırı: ilk kelime yalnızca kendine bakabiliyor ({fmt(visible[0])})."
    else:
        text = f"“{token}” satırı: en büyük pay “{sentence.tokens[best]}” ({fmt(visible[best])})."
    if later:
        text += " Sonraki kelimeler (" + ", ".join(f"“{t}”" for t in later) + ") pay almıyor."
    return text


def _heatmap_layout(sentences: list[Sentence]) -> tuple[int, int, int]:
    """(rows, left margin, top margin) shared by all panels, so switching never resizes."""
    longest = max(len(t) for s in sentences for t in s.tokens)
    # About 7.5 px a character at 13 px; column labels are turned 40°.
    return max(len(s.tokens) for s in sentences), 18 + round(7.5 * longest), 18 + round(4.9 * longest)


def _heatmap_svg(uid: str, sentence: Sentence, weights: np.ndarray, layout: tuple[int, int, int]) -> str:
    cell = 46
    size, left, top = layout
    width, height = left + size * cell + 12, top + size * cell + 12
    n, focus = len(sentence.tokens), sentence.focus
    hatch = f"{uid}-{sentence.id}-hatch"
    parts = [
        f'<svg class="heatmap-svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_e(_heatmap_label(sentence, weights, focus))}">',
        f'<defs><pattern id="{hatch}" width="6" height="6" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><line class="hm-hatch" x1="0" y1="0" x2="0" y2="6"/></pattern></defs>',
        f'<rect class="hm-focus" data-focus-row x="2" y="{top + focus * cell - 1}" '
        f'width="{left + n * cell - 2}" height="{cell + 2}" rx="6"/>',
    ]
    for i, token in enumerate(sentence.tokens):
        y = top + i * cell + cell / 2
        focus_class = " is-focus" if i == focus else ""
        parts.append(
            f'<text class="hm-label hm-row{focus_class}" data-row="{i}" x="{left - 10}" y="{_n(y)}" '
            f'text-anchor="end" dominant-baseline="central">{_e(token)}</text>'
        )
        x = left + i * cell + cell / 2
        parts.append(
            f'<text class="hm-label" x="{_n(x)}" y="{top - 10}" transform="rotate(-40 {_n(x)} {top - 10})">'
            f"{_e(token)}</text>"
        )
    for i in range(n):
        for j in range(n):
            x, y = left + j * cell + 1, top + i * cell + 1
            if j > i:
                parts.append(
                    f'<rect class="hm-masked" x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                    f'rx="3" fill="url(#{hatch})"/>'
                )
                continue
            w = float(weights[i, j])
            strong = " strong" if w >= 0.5 else ""
            parts.append(
                f'<rect class="hm-bg" x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" rx="3"/>'
                f'<rect class="hm-cell" x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" rx="3" '
                f'fill-opacity="{w:.3f}"/>'
                f'<text class="hm-num{strong}" x="{x + (cell - 2) / 2}" y="{y + (cell - 2) / 2}" '
                f'text-anchor="middle" dominant-baseline="central">{fmt(w, 2)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _heatmap_label(sentence: Sentence, weights: np.ndarray, row: int) -> str:
    return (
        f"Isı haritası, {sentence.label}: satırlar bakan kelime (Query), sütunlar bakılan kelime (Key); "
        f"köşegenin üstü maskeli. " + _heatmap_readout(sentence, weights, row)
    )


def _weights_table(sentence: Sentence, weights: np.ndarray) -> str:
    head = "".join(f'<th scope="col">{_e(t)}</th>' for t in sentence.tokens)
    rows = []
    for i, token in enumerate(sentence.tokens):
        cells = []
        for j in range(len(sentence.tokens)):
            if j > i:
                cells.append(
                    '<td class="masked"><span aria-hidden="true">—</span>'
                    '<span class="visually-hidden">maskeli</span></td>'
                )
            else:
                cells.append(f'<td data-value="{weights[i, j]:.6f}">{fmt(weights[i, j])}</td>')
        focus = ' class="is-focus"' if i == sentence.focus else ""
        rows.append(f'<tr{focus} data-row="{i}"><th scope="row">{_e(token)}</th>{"".join(cells)}</tr>')
    return (
        f'<div class="table-scroll" tabindex="0" role="region" aria-label="Ağırlıklar: {_e(sentence.label)}">'
        f'<table class="visual-table weights-table"><caption>{_e(sentence.label)}: attention ağırlıkları '
        f"(satır: Query, sütun: Key; her satırın toplamı 1)</caption>"
        f"<thead><tr><td></td>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


@visual("heatmap")
def heatmap(lesson_dir: Path) -> str:
    model = load_toy_model(lesson_dir)
    uid = _uid(lesson_dir, "heatmap")
    layout = _heatmap_layout(model.sentences)
    data: dict[str, list[dict[str, object]]] = {"sentences": []}
    panels: list[str] = []
    for _index, sentence in enumerate(model.sentences):
        weights = model.self_attention(sentence)["weights"]
        data["sentences"].append(
            {
                "id": sentence.id,
                "tokens": sentence.tokens,
                "focus": sentence.focus,
                "readouts": [_heatmap_readout(sentence, weights, i) for i in range(len(sentence.tokens))],
                "labels": [_heatmap_label(sentence, weights, i) for i in range(len(sentence.tokens))],
            }
        )
        panels.append(
            f'<div class="visual-panel" data-panel="{_e(sentence.id)}">'
            f'<p class="panel-title">{_e(sentence.text)}</p>'
            f'<div class="figure-frame heatmap-frame">{_heatmap_svg(uid, sentence, weights, layout)}</div>'
            f'<details class="table-details" open><summary>Ağırlıklar tablo olarak</summary>'
            f"{_weights_table(sentence, weights)}</details></div>"
        )
    first = model.sentences[0]
    first_weights = model.self_attention(first)["weights"]
    focus_options = "".join(
        f'<option value="{i}"{" selected" if i == first.focus else ""}>{_e(t)}</option>'
        for i, t in enumerate(first.tokens)
    )
    controls = (
        f'<div class="visual-controls" data-js-only hidden>'
        f"{_choice_group(uid, 'Cümle', model.sentences)}"
        f'<label class="select-field">Bakan kelime (Query) <select data-focus-select>{focus_options}</select></label>'
        f"</div>"
    )
    legend = (
        '<p class="visual-legend"><span class="legend-item"><span class="key-swatch swatch-heat" aria-hidden="true">'
        '</span> koyu: büyük pay</span> <span class="legend-item"><span class="key-swatch swatch-masked" '
        'aria-hidden="true"></span> taralı: maskeli (sonraki kelime, pay yok)</span></p>'
    )
    return (
        f'<figure class="visual visual-heatmap" data-visual="heatmap" id="{uid}">'
        f'{_json_block(uid, data)}{controls}{legend}<div class="visual-panels">{"".join(panels)}</div>'
        f'<p class="visual-readout" aria-live="polite" data-readout>{_e(_heatmap_readout(first, first_weights, first.focus))}</p>'
        f"<figcaption>Causal self-attention ağırlıkları: her satır bir kelimenin dikkatini kendisine ve "
        f"<strong>önceki</strong> kelimelere nasıl paylaştırdığını gösterir; sonraki kelimeler maskelidir. "
        f"Vurgulanan satır “{_e(first.tokens[first.focus])}”.</figcaption></figure>"
    )


# --- rotate: turn a query among fixed keys, watch softmax move ---------------------------


def _rotate_config(lesson_dir: Path) -> dict:
    doc = _read_toy(lesson_dir)
    table = doc.data.get("rotate")
    if not isinstance(table, dict):
        raise VisualError(f"{_where(doc, 'rotate')}: needs a [rotate] table with keys = [[x, y], …]")
    keys = _matrix(doc, table.get("keys"), ("rotate", "keys"), cols=2)
    if not 2 <= len(keys) <= 5:
        raise VisualError(f"{_where(doc, 'rotate', 'keys')}: give 2 to 5 keys")
    labels = table.get("labels", [f"k{chr(0x2080 + i + 1)}" for i in range(len(keys))])
    if (
        not isinstance(labels, list)
        or len(labels) != len(keys)
        or not all(isinstance(x, str) for x in labels)
    ):
        raise VisualError(
            f"{_where(doc, 'rotate', 'labels')}: labels must be {len(keys)} strings, one per key"
        )
    length = table.get("query_length", 1.0)
    if not isinstance(length, (int, float)) or isinstance(length, bool) or not 0 < length <= 10:
        raise VisualError(
            f"{_where(doc, 'rotate', 'query_length')}: query_length must be a number in (0, 10]"
        )
    scaled = table.get("scaled", False)
    if not isinstance(scaled, bool):
        raise VisualError(f"{_where(doc, 'rotate', 'scaled')}: scaled must be true or false")
    angles = table.get("angles", [0, 90, 180, 270])
    start = table.get("start", 0)
    if (
        not isinstance(angles, list)
        or not angles
        or not all(isinstance(a, int) and not isinstance(a, bool) and 0 <= a <= 360 for a in angles)
    ):
        raise VisualError(f"{_where(doc, 'rotate', 'angles')}: angles must be whole degrees from 0 to 360")
    if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start <= 360:
        raise VisualError(f"{_where(doc, 'rotate', 'start')}: start must be a whole degree from 0 to 360")
    return {
        "keys": keys,
        "labels": labels,
        "length": float(length),
        "scaled": scaled,
        "angles": angles,
        "start": start,
    }


ROTATE_READOUT = "θ = {angle}°: en büyük pay {label} ({weight})."


def _rotate_readout(config: dict, angle: int) -> str:
    weights = rotate_weights(config["keys"], angle, length=config["length"], scaled=config["scaled"])
    best = int(np.argmax(weights))
    return ROTATE_READOUT.format(angle=angle, label=config["labels"][best], weight=fmt(weights[best]))


@visual("rotate")
def rotate(lesson_dir: Path) -> str:
    config = _rotate_config(lesson_dir)
    uid = _uid(lesson_dir, "rotate")
    keys, labels, start = config["keys"], config["labels"], config["start"]
    size, center = 280, 140
    reach = max(float(np.max(np.hypot(keys[:, 0], keys[:, 1]))), config["length"])
    unit = 100 / reach
    plane = [
        f'<svg class="rotate-plane" viewBox="0 0 {size} {size}" width="{size}" height="{size}" '
        f'aria-label="{_e(_rotate_plane_label(config, start))}" role="img" data-plane>',
        f'<line class="axis" x1="10" y1="{center}" x2="{size - 10}" y2="{center}"/>',
        f'<line class="axis" x1="{center}" y1="10" x2="{center}" y2="{size - 10}"/>',
        f'<circle class="orbit" cx="{center}" cy="{center}" r="{_n(config["length"] * unit)}"/>',
    ]
    for j, (kx, ky) in enumerate(keys):
        x, y = center + kx * unit, center - ky * unit
        plane.append(_arrow(center, center, x, y, f"key-arrow c{j + 1}"))
        norm = float(np.hypot(kx, ky)) or 1.0
        lx, ly = x + kx / norm * 16, y - ky / norm * 16
        plane.append(
            f'<text class="arrow-label" x="{_n(lx)}" y="{_n(ly)}" text-anchor="middle" '
            f'dominant-baseline="central">{_e(labels[j])}</text>'
        )
    tip = config["length"] * unit
    plane.append(
        f'<g data-query transform="rotate({-start} {center} {center})">'
        f"{_arrow(center, center, center + tip, center, 'query-arrow', head=11)}</g>"
    )
    theta = np.deg2rad(start)
    # "q" rides beside the middle of its arrow, so it never sits on a key arrow.
    label_x = center + 0.55 * tip * np.cos(theta) - 13 * np.sin(theta)
    label_y = center - (0.55 * tip * np.sin(theta) + 13 * np.cos(theta))
    plane.append(
        f'<text class="arrow-label query-label" data-query-label x="{_n(label_x)}" y="{_n(label_y)}" '
        f'text-anchor="middle" dominant-baseline="central">q</text>'
    )
    plane.append("</svg>")

    weights = rotate_weights(keys, start, length=config["length"], scaled=config["scaled"])
    query = config["length"] * np.array([np.cos(theta), np.sin(theta)])
    scores = keys @ query / (np.sqrt(2) if config["scaled"] else 1)
    row_h, bar_x, bar_w = 46, 70, 170
    bars = [
        f'<svg class="rotate-bars" viewBox="0 0 320 {row_h * len(keys) + 8}" width="320" '
        f'height="{row_h * len(keys) + 8}" role="img" aria-label="{_e(_rotate_bars_label(config, start))}" data-bars>'
    ]
    best = int(np.argmax(weights))
    for j in range(len(keys)):
        y = 4 + j * row_h
        is_max = " is-max" if j == best else ""
        bars.append(
            f'<g class="bar-row c{j + 1}{is_max}" data-bar="{j}">'
            f'<text class="bar-label" x="0" y="{y + 15}" dominant-baseline="central">{_e(labels[j])}</text>'
            f'<text class="bar-score" x="0" y="{y + 34}" dominant-baseline="central" data-score>skor {fmt(scores[j])}</text>'
            f'<rect class="bar-bg" x="{bar_x}" y="{y + 6}" width="{bar_w}" height="20" rx="3"/>'
            f'<rect class="bar" x="{bar_x}" y="{y + 6}" width="{_n(bar_w * weights[j])}" height="20" rx="3" data-bar-fill/>'
            f'<text class="bar-value" x="{bar_x + bar_w + 8}" y="{y + 16}" dominant-baseline="central" data-weight>'
            f"{fmt(weights[j])}</text></g>"
        )
    bars.append("</svg>")

    score_tex = r"q \cdot k_j / \sqrt{2}" if config["scaled"] else r"q \cdot k_j"
    head = "".join(f'<th scope="col">{_e(label)}</th>' for label in labels)
    rows = []
    for angle in config["angles"]:
        w = rotate_weights(keys, angle, length=config["length"], scaled=config["scaled"])
        cells = "".join(f'<td data-value="{x:.6f}">{fmt(x)}</td>' for x in w)
        rows.append(f'<tr data-angle="{angle}"><th scope="row">{angle}°</th>{cells}</tr>')
    table = (
        f'<details class="table-details" open><summary>Birkaç açı için paylar</summary>'
        f'<div class="table-scroll" tabindex="0" role="region" aria-label="Açılara göre paylar">'
        f'<table class="visual-table rotate-table"><caption>Query açısına göre softmax payları</caption>'
        f'<thead><tr><th scope="col">θ</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div></details>'
    )
    data = {
        "keys": keys.tolist(),
        "labels": labels,
        "length": config["length"],
        "scaled": config["scaled"],
        "start": start,
        "barWidth": bar_w,
        "center": center,
        "unit": unit,
        "readout": ROTATE_READOUT,
        "planeLabel": ROTATE_PLANE_LABEL,
        "barsLabel": ROTATE_BARS_LABEL,
        "scorePrefix": "skor ",
    }
    controls = (
        f'<div class="visual-controls rotate-controls" data-js-only hidden>'
        f'<label class="range-field">Query\'nin açısı θ '
        f'<input type="range" min="0" max="360" step="1" value="{start}" data-angle aria-valuetext="{start}°"></label>'
        f'<output class="angle-output" data-angle-output>{start}°</output>'
        f'<button type="button" class="secondary small-button" data-turn="15" '
        f'aria-label="Query\'yi saat yönünün tersine 15° döndür">↺ 15°</button>'
        f'<button type="button" class="secondary small-button" data-turn="-15" '
        f'aria-label="Query\'yi saat yönünde 15° döndür">↻ 15°</button></div>'
    )
    return (
        f'<figure class="visual visual-rotate" data-visual="rotate" id="{uid}">{_json_block(uid, data)}{controls}'
        f'<div class="rotate-layout"><div class="figure-frame rotate-plane-frame">{"".join(plane)}</div>'
        f'<div class="figure-frame rotate-bars-frame">{"".join(bars)}</div></div>'
        f'<p class="visual-readout" aria-live="polite" data-readout>{_e(_rotate_readout(config, start))}</p>'
        f"{table}<figcaption>Query okunu döndürün: her Key için skor {_math(score_tex)}, "
        f"paylar {_math(r'a_j = \text{softmax}_j(' + score_tex + ')')}. "
        f"Query hangi Key'e yönelirse payın çoğu ona gider; toplam her zaman 1.</figcaption></figure>"
    )


ROTATE_PLANE_LABEL = "Düzlemde Key okları ve θ = {angle}° açısındaki Query oku."
ROTATE_BARS_LABEL = "Softmax payları, θ = {angle}°: {shares}."


def _rotate_plane_label(config: dict, angle: int) -> str:
    return ROTATE_PLANE_LABEL.format(angle=angle)


def _rotate_bars_label(config: dict, angle: int) -> str:
    w = rotate_weights(config["keys"], angle, length=config["length"], scaled=config["scaled"])
    return ROTATE_BARS_LABEL.format(
        angle=angle, shares=", ".join(f"{l} {fmt(x)}" for l, x in zip(config["labels"], w))
    )


# --- blend: the weighted mix of values that moves "çay" ----------------------------------


def blend_steps(model: ToyModel, sentence: Sentence) -> dict:
    """The focus word's weights over the words it may see, their values, the mix and the new vector."""
    steps = model.self_attention(sentence)
    i = sentence.focus
    weights = steps["weights"][i, : i + 1]
    values = steps["V"][: i + 1]
    own = steps["X"][i, :2]
    mix = weights @ values
    return {"weights": weights, "values": values, "own": own, "mix": mix, "new": own + mix}


def _blend_svg(
    model: ToyModel, sentence: Sentence, blend: dict, others: list[tuple[Sentence, dict]], bounds
) -> str:
    (xmin, xmax, ymin, ymax), size, margin = bounds, 340, 34
    unit = (size - 2 * margin) / max(xmax - xmin, ymax - ymin)

    def px(x, y):
        return margin + (x - xmin) * unit, size - margin - (y - ymin) * unit

    ox, oy = px(0, 0)
    focus = sentence.tokens[sentence.focus]
    best = int(np.argmax(blend["weights"]))
    label = (
        f"{sentence.label}: “{focus}” vektörü {fmt_vector(blend['own'], 2)} noktasından "
        f"{fmt_vector(blend['new'], 2)} noktasına kayıyor; en büyük pay “{sentence.tokens[best]}” "
        f"({fmt(blend['weights'][best], 2)}), Value'su {fmt_vector(blend['values'][best], 2)}."
    )
    parts = [
        f'<svg class="blend-svg" viewBox="0 0 {size} {size}" width="{size}" height="{size}" role="img" '
        f'aria-label="{_e(label)}">'
    ]
    for g in range(int(np.ceil(xmin)), int(np.floor(xmax)) + 1):
        x, _ = px(g, 0)
        parts.append(
            f'<line class="grid" x1="{_n(x)}" y1="{margin - 10}" x2="{_n(x)}" y2="{size - margin + 10}"/>'
        )
    for g in range(int(np.ceil(ymin)), int(np.floor(ymax)) + 1):
        _, y = px(0, g)
        parts.append(
            f'<line class="grid" x1="{margin - 10}" y1="{_n(y)}" x2="{size - margin + 10}" y2="{_n(y)}"/>'
        )
    parts.append(_arrow(margin - 10, oy, size - 8, oy, "axis-arrow", head=7))
    parts.append(_arrow(ox, size - margin + 10, ox, 8, "axis-arrow", head=7))
    parts.append(
        f'<text class="axis-label" x="{size - 8}" y="{_n(oy + 16)}" text-anchor="end">{_e(model.features[0])} →</text>'
    )
    parts.append(f'<text class="axis-label" x="{_n(ox + 8)}" y="16">↑ {_e(model.features[1])}</text>')
    for other, other_blend in others:
        gx, gy = px(*other_blend["new"])
        # The label goes toward the middle of the plane, so it never leaves the picture.
        left_half = gx < size / 2
        parts.append(
            f'<circle class="ghost" cx="{_n(gx)}" cy="{_n(gy)}" r="6"/>'
            f'<text class="ghost-label" x="{_n(gx - 4 if left_half else gx + 4)}" y="{_n(gy + 22)}" '
            f'text-anchor="{"start" if left_half else "end"}">{_e(other.label)}</text>'
        )
    for j, (w, v) in enumerate(zip(blend["weights"], blend["values"])):
        if np.hypot(*v) < 1e-9:
            continue
        x, y = px(*v)
        opacity = 0.3 + 0.7 * float(w)
        parts.append(_arrow(ox, oy, x, y, "value-arrow", head=8, extra=f' opacity="{opacity:.2f}"'))
        if j != sentence.focus:
            horizontal = abs(v[0]) >= abs(v[1])
            lx, ly = (x, y + 18) if horizontal else (x + 10, y + 4)
            anchor = "middle" if horizontal else "start"
            parts.append(
                f'<text class="value-label" x="{_n(lx)}" y="{_n(ly)}" text-anchor="{anchor}">'
                f"{_e(sentence.tokens[j])} · {fmt(w, 2)}</text>"
            )
    sx, sy = px(*blend["own"])
    nx, ny = px(*blend["new"])
    parts.append(_arrow(ox, oy, sx, sy, "own-arrow", head=9))
    parts.append(_arrow(sx, sy, nx, ny, "mix-arrow", head=9))
    parts.append(_arrow(ox, oy, nx, ny, "new-arrow", head=11))
    # The word's own label sits on the side away from where the mix pushes it.
    ux, uy = np.array([nx - sx, ny - sy]) / max(float(np.hypot(nx - sx, ny - sy)), 1e-9)
    anchor = "end" if ux > 0.5 else "start" if ux < -0.5 else "middle"
    parts.append(
        f'<text class="own-label" x="{_n(sx - ux * 14)}" y="{_n(sy - uy * 16 + 4)}" '
        f'text-anchor="{anchor}">{_e(focus)}</text>'
    )
    parts.append(
        f'<text class="new-label" x="{_n(nx + 6)}" y="{_n(ny - 10)}" text-anchor="middle">yeni {_e(focus)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _blend_table(sentence: Sentence, blend: dict) -> str:
    focus = sentence.tokens[sentence.focus]
    rows = "".join(
        f'<tr><th scope="row">{_e(sentence.tokens[j])}</th><td data-value="{w:.6f}">{fmt(w)}</td>'
        f"<td>{fmt_vector(v)}</td><td>{fmt_vector(w * v)}</td></tr>"
        for j, (w, v) in enumerate(zip(blend["weights"], blend["values"]))
    )
    foot = (
        f'<tr><th scope="row" colspan="3">Karışım {_math(r"\sum_j a_j v_j")}</th><td>{fmt_vector(blend["mix"])}</td></tr>'
        f'<tr><th scope="row" colspan="3">“{_e(focus)}” (kendi vektörü)</th><td>{fmt_vector(blend["own"])}</td></tr>'
        f'<tr class="is-focus"><th scope="row" colspan="3">Yeni “{_e(focus)}” = kendi + karışım</th>'
        f"<td data-new>{fmt_vector(blend['new'])}</td></tr>"
    )
    return (
        f'<div class="table-scroll" tabindex="0" role="region" aria-label="Harmanlama: {_e(sentence.label)}">'
        f'<table class="visual-table blend-table"><caption>{_e(sentence.label)}: “{_e(focus)}” için harmanlama</caption>'
        f'<thead><tr><th scope="col">Kelime</th><th scope="col">Pay {_math("a_j")}</th>'
        f'<th scope="col">Value {_math("v_j")}</th><th scope="col">{_math(r"a_j v_j")}</th></tr></thead>'
        f"<tbody>{rows}</tbody><tfoot>{foot}</tfoot></table></div>"
    )


def _blend_readout(sentence: Sentence, blend: dict) -> str:
    focus = sentence.tokens[sentence.focus]
    best = int(np.argmax(blend["weights"]))
    return (
        f"{sentence.label}: “{focus}” {fmt_vector(blend['own'], 2)} → {fmt_vector(blend['new'], 2)}; "
        f"en çok “{sentence.tokens[best]}” Value'sundan pay alıyor ({fmt(blend['weights'][best], 2)})."
    )


@visual("blend")
def blend(lesson_dir: Path) -> str:
    model = load_toy_model(lesson_dir)
    uid = _uid(lesson_dir, "blend")
    blends = [(s, blend_steps(model, s)) for s in model.sentences]
    points = np.vstack([np.zeros((1, 2))] + [np.vstack([b["values"], b["own"], b["new"]]) for _, b in blends])
    low, high = points.min(axis=0), points.max(axis=0)
    pad = 0.25 * max(float(np.max(high - low)), 1.0)
    bounds = (low[0] - pad, high[0] + pad, low[1] - pad, high[1] + pad)
    panels = []
    for sentence, b in blends:
        others = [(s, ob) for s, ob in blends if s is not sentence]
        panels.append(
            f'<div class="visual-panel" data-panel="{_e(sentence.id)}" data-readout-text="{_e(_blend_readout(sentence, b))}">'
            f'<p class="panel-title">{_e(sentence.text)}</p>'
            f'<div class="figure-frame blend-frame">{_blend_svg(model, sentence, b, others, bounds)}</div>'
            f'<details class="table-details" open><summary>Sayılar tablo olarak</summary>{_blend_table(sentence, b)}</details></div>'
        )
    first, first_blend = blends[0]
    focus = first.tokens[first.focus]
    formula = _math(r"\text{" + focus + r"}_{\text{yeni}} = \text{" + focus + r"} + \sum_j a_j v_j")
    return (
        f'<figure class="visual visual-blend" data-visual="blend" id="{uid}">'
        f'<div class="visual-controls" data-js-only hidden>{_choice_group(uid, "Cümle", model.sentences)}</div>'
        f'<div class="visual-panels">{"".join(panels)}</div>'
        f'<p class="visual-readout" aria-live="polite" data-readout>{_e(_blend_readout(first, first_blend))}</p>'
        f"<figcaption>Önceki kelimelerin Value okları (soluk: küçük pay) ağırlıklarıyla toplanır ve "
        f"“{_e(focus)}”ın kendi vektörüne eklenir: {formula}. Boş daire, aynı kelimenin öteki cümledeki yeni yeridir."
        f"</figcaption></figure>"
    )


# --- playground: Q, K, V in, every step of attention out ---------------------------------

# The small example of the scaled-dot-product lesson; a lesson may bring its own in
# toy.toml ([playground] Q = …, K = …, V = …, causal = false).
PLAYGROUND_DEFAULTS = {
    "Q": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "K": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "V": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "causal": False,
}
PLAYGROUND_READOUT = "{row}. Query en çok {col}. Key'e bakıyor ({weight}); çıktısı {output}."
PLAYGROUND_INVALID = (
    "{name}: bir sayı girin, örneğin 1,5 ya da -0.5 (ondalık için virgül ya da nokta; binlik ayırıcı yok)."
)


def _playground_config(lesson_dir: Path) -> dict:
    config = dict(PLAYGROUND_DEFAULTS)
    if not (lesson_dir / TOY_FILE).is_file():
        return {**config, **{k: np.array(config[k]) for k in "QKV"}}
    doc = _read_toy(lesson_dir)
    table = doc.data.get("playground", {})
    if not isinstance(table, dict):
        raise VisualError(f"{_where(doc, 'playground')}: [playground] must be a table")
    config.update(table)
    Q = _matrix(doc, config["Q"], ("playground", "Q"))
    K = _matrix(doc, config["K"], ("playground", "K"), cols=Q.shape[1])
    V = _matrix(doc, config["V"], ("playground", "V"), rows=K.shape[0])
    if max(Q.shape + K.shape + V.shape) > 4:
        raise VisualError(
            f"{_where(doc, 'playground')}: keep the playground small: at most 4 rows and 4 columns"
        )
    if not isinstance(config["causal"], bool):
        raise VisualError(f"{_where(doc, 'playground', 'causal')}: causal must be true or false")
    return {"Q": Q, "K": K, "V": V, "causal": config["causal"]}


def _input_matrix(name: str, matrix: np.ndarray, title: str) -> str:
    rows = []
    for i, row in enumerate(matrix):
        cells = "".join(
            f'<td><label><span class="visually-hidden">{name} satır {i + 1}, sütun {j + 1}</span>'
            # Text, not type=number: a number field drops the comma of "1,5" (it becomes 15).
            # The value is shown as the lesson writes numbers; data-default is for the script.
            f'<input type="text" inputmode="decimal" autocomplete="off" spellcheck="false" size="5" '
            f'value="{_input_number(value)}" data-matrix="{name}" '
            f'data-i="{i}" data-j="{j}" data-default="{value:g}" readonly></label></td>'
            for j, value in enumerate(row)
        )
        rows.append(f"<tr>{cells}</tr>")
    shape = f"{matrix.shape[0]}×{matrix.shape[1]}"
    return (
        f'<fieldset class="pg-matrix"><legend>{_math(name)} <span class="muted-inline">{title}, {shape}</span></legend>'
        f'<table class="matrix-inputs"><tbody>{"".join(rows)}</tbody></table></fieldset>'
    )


def _input_number(value: float) -> str:
    return f"{value:g}".replace(".", ",")


def _result_table(key: str, caption: str, matrix: np.ndarray, col_label: str, *, heat: bool = False) -> str:
    head = "".join(f'<th scope="col">{col_label}<sub>{j + 1}</sub></th>' for j in range(matrix.shape[1]))
    rows = []
    for i, row in enumerate(matrix):
        cells = []
        for j, value in enumerate(row):
            classes = []
            if heat:
                classes.append(f"heat-{_shade(value)}")
            if np.isinf(value):
                classes.append("masked")
            cls = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f'<td{cls} data-i="{i}" data-j="{j}">{fmt(value)}</td>')
        rows.append(f'<tr><th scope="row">q<sub>{i + 1}</sub></th>{"".join(cells)}</tr>')
    return (
        f'<div class="pg-result"><table class="visual-table matrix-table" data-result="{key}">'
        f"<caption>{caption}</caption><thead><tr><td></td>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


@visual("playground")
def playground(lesson_dir: Path) -> str:
    config = _playground_config(lesson_dir)
    uid = _uid(lesson_dir, "playground")
    Q, K, V = config["Q"], config["K"], config["V"]
    steps = attention_steps(Q, K, V, causal=config["causal"])
    d_k = Q.shape[1]
    weights, output = steps["weights"], steps["output"]
    best = int(np.argmax(weights[0]))
    readout = PLAYGROUND_READOUT.format(
        row=1, col=best + 1, weight=fmt(weights[0, best]), output=fmt_vector(output[0])
    )
    data = {
        "defaults": {"Q": Q.tolist(), "K": K.tolist(), "V": V.tolist(), "causal": config["causal"]},
        "readout": PLAYGROUND_READOUT,
        "invalid": PLAYGROUND_INVALID,
    }
    inputs = (
        _input_matrix("Q", Q, "Query'ler")
        + _input_matrix("K", K, "Key'ler")
        + _input_matrix("V", V, "Value'lar")
    )
    results = (
        _result_table("scores", f"Skorlar {_math('Q K^T')}", steps["scores"], "k")
        + _result_table(
            "scaled", f"Ölçekli {_math(r'Q K^T / \sqrt{' + str(d_k) + '}')}", steps["scaled"], "k"
        )
        + _result_table(
            "weights", f"Ağırlıklar {_math('A = \\text{softmax}')} (satırlar)", weights, "k", heat=True
        )
        + _result_table("output", f"Çıktı {_math('Y = A V')}", output, "v")
    )
    checked = " checked" if config["causal"] else ""
    controls = (
        f'<div class="visual-controls" data-js-only hidden>'
        f'<label class="check-field"><input type="checkbox" data-causal{checked}> Causal maske '
        f"(her Query yalnızca kendisine ve önceki Key'lere bakar)</label>"
        f'<button type="button" class="secondary small-button" data-reset>Varsayılana dön</button></div>'
    )
    return (
        f'<figure class="visual visual-playground" data-visual="playground" id="{uid}">{_json_block(uid, data)}'
        f'<div class="pg-inputs">{inputs}</div>'
        f'<p class="pg-error" role="alert" data-pg-error hidden></p>{controls}'
        f'<div class="pg-results">{results}</div>'
        f'<p class="visual-readout" aria-live="polite" data-readout>{_e(readout)}</p>'
        f"<figcaption>Attention oyun alanı: {_math(r'\text{softmax}(Q K^T / \sqrt{d_k})\, V')} adım adım. "
        f"Bir sayıyı değiştirin; skorlar, ağırlıklar (koyu hücre: büyük ağırlık) ve çıktı hemen yeniden hesaplanır."
        f"</figcaption></figure>"
    )
