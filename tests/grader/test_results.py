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
