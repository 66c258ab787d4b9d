"""Messages are language-neutral msgids; the Turkish catalogue covers every one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grader.core import Message
from grader.core import messages as M

PO = Path(__file__).resolve().parents[2] / "grader" / "locale" / "tr" / "LC_MESSAGES" / "django.po"
PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def parse_po(path: Path) -> tuple[str, dict[str, str]]:
    """A small .po reader (single-line entries and continuation lines)."""
    entries: dict[str, str] = {}
    msgid = msgstr = None
    current = None
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("msgid "):
            if msgid is not None:
                entries[msgid] = msgstr
            msgid, msgstr, current = ast.literal_eval(line[6:]), "", "id"
        elif line.startswith("msgstr "):
            msgstr, current = ast.literal_eval(line[7:]), "str"
        elif line.startswith('"'):
            if current == "id":
                msgid += ast.literal_eval(line)
            else:
                msgstr += ast.literal_eval(line)
    if msgid is not None:
        entries[msgid] = msgstr
    header = entries.pop("", "")
    return header, entries


def all_msgids() -> list[str]:
    return [v for k, v in vars(M).items() if k.isupper() and isinstance(v, str)]


def test_po_header_is_turkish_utf8_with_plural_forms():
    header, _ = parse_po(PO)
    assert "Language: tr\n" in header
    assert "charset=UTF-8" in header
    assert "Plural-Forms: nplurals=2; plural=(n != 1);" in header


@pytest.mark.parametrize("msgid", all_msgids())
def test_every_msgid_has_a_turkish_translation_with_the_same_placeholders(msgid):
    _, entries = parse_po(PO)
    assert msgid in entries, msgid
    translation = entries[msgid]
    assert translation and translation != msgid
    assert sorted(PLACEHOLDER.findall(translation)) == sorted(PLACEHOLDER.findall(msgid))


def test_render_fills_params_and_uses_the_translation():
    _, entries = parse_po(PO)
    msg = Message(
        M.CASE_SHAPE_NAMED, {"result": "Y", "names": "(n_q, d_v)", "expected": "(4, 3)", "got": "(3, 4)"}
    )
    assert msg.render() == "Y has the wrong shape: expected (n_q, d_v) = (4, 3), got (3, 4)."
    assert (
        msg.render(lambda s: entries.get(s, s))
        == "Y yanlış boyutta: beklenen (n_q, d_v) = (4, 3), gelen (3, 4)."
    )


def test_render_survives_a_broken_translation():
    msg = Message(M.CASE_VALUES_HIDDEN, {"result": "Y"})
    assert msg.render(lambda s: "%(oops)s") == "Y has wrong values on this hidden case."


def test_turkish_uses_turkish_letters():
    _, entries = parse_po(PO)
    text = "".join(entries.values())
    for letter in "çğıİöşü":
        assert letter in text or letter == "İ", letter
