"""Safe reading of what a sandbox left behind.

Everything in the output directory was writable by untrusted code, so every
file is opened relative to a directory fd with ``O_NOFOLLOW`` (a planted
symlink fails), ``O_NONBLOCK`` (a planted FIFO cannot block us), checked with
``fstat`` to be a regular file, read with a size cap, and ``.npy`` files are
parsed by hand from a validated header: no pickle, no object dtype, no
structured dtype, exact byte count.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

NUMERIC_KINDS = "biufc"
MAX_HEADER = 10_000
# The header np.save writes for a plain numeric array, and nothing else: read without
# ast.literal_eval (a third of the host's time per result); any other header goes to NumPy's
# parser, which accepts a superset of these and reads them the same way.
PLAIN_HEADER = re.compile(
    rb"\{'descr': '(?P<descr>[<>|][biufc][0-9]{1,2})', 'fortran_order': (?P<fortran>True|False), "
    rb"'shape': \((?P<shape>|(?:0|[1-9][0-9]{0,17}),|(?:0|[1-9][0-9]{0,17})(?:, (?:0|[1-9][0-9]{0,17}))+)\), "
    rb"\} *\n"
)


@dataclass(frozen=True)
class LoadProblem:
    """Why a result file could not be used: a short code plus details."""

    code: str  # missing | symlink | not_regular | too_large | bad_header | dtype | truncated
    detail: str = ""


def _plain_header(f: BinaryIO, size_bytes: int) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """(shape, fortran order, dtype) of a header in PLAIN_HEADER's form, else None."""
    length = int.from_bytes(f.read(size_bytes), "little")
    if length > MAX_HEADER:
        return None
    header = f.read(length)
    if len(header) != length:
        return None
    match = PLAIN_HEADER.fullmatch(header)
    if match is None:
        return None
    shape = tuple(int(n) for n in match["shape"].split(b",") if n.strip())
    return shape, match["fortran"] == b"True", np.dtype(match["descr"].decode())


class OutputDir:
    """Read-only, symlink-proof access to a sandbox's output directory."""

    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OutputDir:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _open(self, name: str) -> tuple[int, os.stat_result] | LoadProblem:
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"bad output file name {name!r}")
        try:
            fd = os.open(
                name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY,
                dir_fd=self.fd,
            )
        except FileNotFoundError:
            return LoadProblem("missing")
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return LoadProblem("symlink")
            return LoadProblem("unreadable", exc.strerror or "")
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return LoadProblem("not_regular")
        return fd, st

    def exists(self, name: str) -> bool:
        opened = self._open(name)
        if isinstance(opened, LoadProblem):
            return False
        os.close(opened[0])
        return True

    def read_bytes(self, name: str, cap: int) -> tuple[bytes, int] | LoadProblem:
        """Up to ``cap`` bytes of a regular file, and the file's real size."""
        opened = self._open(name)
        if isinstance(opened, LoadProblem):
            return opened
        fd, st = opened
        try:
            chunks = []
            remaining = cap
            while remaining > 0:
                chunk = os.read(fd, min(remaining, 65536))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks), st.st_size
        finally:
            os.close(fd)

    def read_json(self, name: str, cap: int = 65536) -> dict[str, Any] | None:
        """A JSON object from an untrusted file, or None if absent/oversized/invalid."""
        got = self.read_bytes(name, cap + 1)
        if isinstance(got, LoadProblem) or got[1] > cap:
            return None
        try:
            value = json.loads(got[0].decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None

    def load_array(self, name: str, max_bytes: int) -> np.ndarray | LoadProblem:
        """Load a ``.npy`` file written by untrusted code, validating everything."""
        opened = self._open(name)
        if isinstance(opened, LoadProblem):
            return opened
        fd, st = opened
        with os.fdopen(fd, "rb") as f:
            if st.st_size > max_bytes + MAX_HEADER:
                return LoadProblem("too_large", str(st.st_size))
            try:
                version = np.lib.format.read_magic(f)
                if version not in ((1, 0), (2, 0)):
                    return LoadProblem("bad_header", f"version {version}")
                start = f.tell()
                header = _plain_header(f, 2 if version == (1, 0) else 4)
                if header is not None:
                    shape, fortran, dtype = header
                else:  # anything but the plain header NumPy writes: NumPy's own strict parser
                    f.seek(start)
                    read_header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, fortran, dtype = read_header(f, max_header_size=MAX_HEADER)
            except Exception as exc:  # noqa: BLE001 -- ValueError on any malformed header
                return LoadProblem("bad_header", str(exc)[:200])
            if (
                not isinstance(dtype, np.dtype)
                or dtype.hasobject
                or dtype.fields is not None
                or dtype.subdtype is not None
                or dtype.kind not in NUMERIC_KINDS
            ):
                return LoadProblem("dtype", getattr(dtype, "str", "?"))
            if (
                not isinstance(shape, tuple)
                or len(shape) > 32
                or not all(type(n) is int and n >= 0 for n in shape)
            ):
                return LoadProblem("bad_header", "shape")
            count = 1
            for n in shape:
                count *= n
            nbytes = count * dtype.itemsize
            if nbytes > max_bytes:
                return LoadProblem("too_large", str(nbytes))
            if st.st_size - f.tell() != nbytes:
                return LoadProblem("truncated")
            data = f.read(nbytes)
            if len(data) != nbytes:
                return LoadProblem("truncated")
        try:  # (0, 10**18, 10**18): no bytes, yet no array NumPy can shape
            arr = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
        except ValueError:
            return LoadProblem("bad_header", "shape")
        # A native-order, owned, writable copy: nothing refers back to the file.
        arr = np.array(arr, dtype=dtype.newbyteorder("="), order="C", copy=True)
        assert type(arr) is np.ndarray
        return arr
