"""TOML files that remember where things are, so every problem can name file and line.

tomllib gives no positions, so keys are located by scanning the text: good enough for the
files authors write by hand (one key per line, array-of-tables for lists of records).
"""

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

_DECODE_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


class TomlSyntaxError(Exception):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


def parse_toml(text: str) -> dict:
    """Parse TOML; on error raise TomlSyntaxError carrying the 1-based line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _DECODE_POSITION.search(str(exc))
        line = int(match.group(1)) if match else getattr(exc, "lineno", 1)
        message = _DECODE_POSITION.sub("", str(exc)).strip()
        raise TomlSyntaxError(f"TOML syntax error: {message}", line) from exc


@dataclass
class TomlSource:
    path: Path
    text: str
    data: dict
    first_line: int = 1  # where the TOML starts in its file (front matter starts at 2)

    @classmethod
    def read(cls, path: Path, text: str | None = None, first_line: int = 1) -> "TomlSource":
        text = path.read_text(encoding="utf-8") if text is None else text
        try:
            data = parse_toml(text)
        except TomlSyntaxError as exc:
            exc.line += first_line - 1
            raise
        return cls(path, text, data, first_line)

    def line_of(self, *keys: str | int) -> int:
        """Best 1-based file line for a key path such as ("questions", 2, "options")."""
        lines = self.text.splitlines()
        start, end = 0, len(lines)
        found = 0
        prefix = ""
        parts = list(keys)
        i = 0
        while i < len(parts):
            part = parts[i]
            if isinstance(part, int):
                i += 1
                continue
            name = f"{prefix}.{part}" if prefix else str(part)
            index = parts[i + 1] if i + 1 < len(parts) and isinstance(parts[i + 1], int) else None
            header = self._find_header(lines, start, end, name, index)
            if header is not None:
                start = header
                end = self._table_end(lines, header + 1, end, name)
                found = header + 1
                prefix = name
            else:
                key_line = self._find_key(lines, start, end, str(part))
                if key_line is None:
                    break
                found = key_line + 1
                break  # an inline value: we cannot look deeper reliably
            i += 1
        return (found or 1) + self.first_line - 1

    @staticmethod
    def _find_header(lines, start, end, name, index):
        seen = -1
        for number in range(start, end):
            match = _HEADER.match(lines[number])
            if match and match.group(2).replace(" ", "") == name:
                seen += 1
                if index is None or seen == index:
                    return number
        return None

    @staticmethod
    def _table_end(lines, start, end, name):
        for number in range(start, end):
            match = _HEADER.match(lines[number])
            if match:
                other = match.group(2).replace(" ", "")
                if not other.startswith(name + "."):
                    return number
        return end

    @staticmethod
    def _find_key(lines, start, end, key):
        pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(start, end):
            if number > start and _HEADER.match(lines[number]):
                break  # keys after a sub-table header belong to that sub-table
            if pattern.match(lines[number]):
                return number
        return None
