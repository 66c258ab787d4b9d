"""The host's reader for untrusted output files."""

from __future__ import annotations

import os

import numpy as np
import pytest

from grader.core.results import LoadProblem, OutputDir


@pytest.fixture
def out(tmp_path):
    with OutputDir(str(tmp_path)) as d:
        yield tmp_path, d


def test_plain_arrays_round_trip(out):
    path, d = out
    for arr in (
        np.arange(6.0).reshape(2, 3),
        np.array([True, False]),
        np.arange(4, dtype=">i4"),
        np.float64(2.5),
    ):
        np.save(path / "a.npy", arr, allow_pickle=False)
        got = d.load_array("a.npy", 1 << 20)
        assert type(got) is np.ndarray and got.dtype.isnative
        np.testing.assert_array_equal(got, arr)


def test_fortran_order_is_respected(out):
    path, d = out
    arr = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    np.save(path / "f.npy", arr)
    np.testing.assert_array_equal(d.load_array("f.npy", 1 << 20), arr)


def test_symlinks_are_not_followed(out, tmp_path_factory):
    path, d = out
    target = tmp_path_factory.mktemp("elsewhere") / "secret.npy"
    np.save(target, np.ones(3))
    os.symlink(target, path / "link.npy")
    assert d.load_array("link.npy", 1 << 20) == LoadProblem("symlink")
    assert d.read_bytes("link.npy", 100) == LoadProblem("symlink")


def test_fifos_and_directories_are_not_regular_files(out):
    path, d = out
    os.mkfifo(path / "pipe.npy")
    os.mkdir(path / "dir.npy")
    assert d.load_array("pipe.npy", 100).code == "not_regular"
    assert d.load_array("dir.npy", 100).code in ("not_regular", "unreadable")


def test_pickled_object_arrays_are_refused_before_unpickling(out, tmp_path):
    path, d = out
    np.save(path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert d.load_array("obj.npy", 1 << 20).code == "dtype"


def test_structured_and_string_dtypes_are_refused(out):
    path, d = out
    np.save(path / "s.npy", np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]))
    np.save(path / "u.npy", np.array(["x"]))
    assert d.load_array("s.npy", 1 << 20).code == "dtype"
    assert d.load_array("u.npy", 1 << 20).code == "dtype"


def test_oversized_and_truncated_files_are_refused(out):
    path, d = out
    np.save(path / "big.npy", np.zeros(1000))
    assert d.load_array("big.npy", 4000).code == "too_large"
    data = (path / "big.npy").read_bytes()
    (path / "cut.npy").write_bytes(data[:-8])
    assert d.load_array("cut.npy", 1 << 20).code == "truncated"
    (path / "extra.npy").write_bytes(data + b"\0" * 8)
    assert d.load_array("extra.npy", 1 << 20).code == "truncated"


def test_a_lying_header_claiming_a_huge_shape_is_refused(out):
    path, d = out
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }"
    header += " " * (118 - len(header)) + "\n"
    (path / "lie.npy").write_bytes(
        b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 8
    )
    assert d.load_array("lie.npy", 1 << 20).code == "too_large"


def _npy_with_header(header: str, data: bytes, version: int = 1) -> bytes:
    size = 2 if version == 1 else 4
    header += " " * (-(10 + size - 2 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY" + bytes([version, 0]) + len(header).to_bytes(size, "little") + header.encode() + data


def test_headers_numpy_accepts_in_other_forms_read_the_same(out):
    """The host reads np.save's own header form itself; other valid forms (keys in another
    order, version 2.0, an 18-digit size) go to NumPy's parser and mean the same."""
    path, d = out
    data = np.arange(6, dtype="<i4").tobytes()
    forms = {
        "plain.npy": _npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", data),
        "reordered.npy": _npy_with_header("{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}", data),
        "v2.npy": _npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", data, 2),
        "fortran.npy": _npy_with_header("{'descr': '<i4', 'fortran_order': True, 'shape': (3, 2), }", data),
    }
    for name, content in forms.items():
        (path / name).write_bytes(content)
    expected = np.arange(6, dtype="<i4").reshape(2, 3)
    for name in ("plain.npy", "reordered.npy", "v2.npy"):
        np.testing.assert_array_equal(d.load_array(name, 1 << 20), expected)
    np.testing.assert_array_equal(d.load_array("fortran.npy", 1 << 20), np.arange(6).reshape(3, 2, order="F"))
    # Plain in form, wrong in content: still checked after the header is read.
    (path / "short.npy").write_bytes(
        _npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 4), }", data)
    )
    (path / "text.npy").write_bytes(
        _npy_with_header("{'descr': '<U1', 'fortran_order': False, 'shape': (6,), }", data * 4)
    )
    (path / "commas.npy").write_bytes(
        _npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (,), }", data)
    )
    # A zero axis beside huge ones: no bytes to read, yet no array NumPy can shape.
    (path / "zero.npy").write_bytes(
        _npy_with_header(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 999999999999999999, 999999999999999999), }",
            b"",
        )
    )
    # Leading zeros are no Python literal: NumPy refuses them, and so do we.
    (path / "zeros.npy").write_bytes(
        _npy_with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (02, 3), }", data)
    )
    assert d.load_array("zero.npy", 1 << 20).code == "bad_header"
    assert d.load_array("zeros.npy", 1 << 20).code == "bad_header"
    assert d.load_array("short.npy", 1 << 20).code == "truncated"
    assert d.load_array("text.npy", 1 << 20).code == "dtype"
    assert d.load_array("commas.npy", 1 << 20).code == "bad_header"


def test_garbage_headers_are_refused(out):
    path, d = out
    (path / "junk.npy").write_bytes(b"not a numpy file at all")
    (path / "evil.npy").write_bytes(b"\x93NUMPY\x01\x00\x20\x00__import__('os').system('x')   \n")
    assert d.load_array("junk.npy", 100).code == "bad_header"
    assert d.load_array("evil.npy", 100).code == "bad_header"


def test_json_reader_caps_and_validates(out):
    path, d = out
    (path / "ok.json").write_text('{"status": "ok"}')
    (path / "list.json").write_text("[1, 2]")
    (path / "big.json").write_text('{"a": "' + "x" * 100_000 + '"}')
    (path / "deep.json").write_text("[" * 100_000)
    assert d.read_json("ok.json") == {"status": "ok"}
    assert d.read_json("list.json") is None
    assert d.read_json("big.json") is None
    assert d.read_json("deep.json") is None
    assert d.read_json("missing.json") is None


def test_names_with_slashes_are_a_programming_error(out):
    _, d = out
    with pytest.raises(ValueError):
        d.load_array("../x.npy", 10)
