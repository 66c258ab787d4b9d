"""Shape traces: a shape error told in the exercise's own axis names, on hidden cases too."""

from __future__ import annotations

import numpy as np
import pytest
from grader_testkit import dump

from grader.core import Verdict
from grader.core import messages as M
from grader.core.traces import shape_trace

NAMES = {"Q": ("n_q", "d_k"), "K": ("n_k", "d_k"), "V": ("n_k", "d_v")}


def inputs(n_q=2, n_k=3, d_k=4, d_v=5):
    return {"Q": np.zeros((n_q, d_k)), "K": np.zeros((n_k, d_k)), "V": np.zeros((n_k, d_v))}


def numpy_error(fn) -> str:
    try:
        fn()
    except ValueError as exc:
        return str(exc)
    raise AssertionError("no error")


def test_q_at_k_without_transpose_names_the_axes_and_suggests_k_t():
    case = inputs()
    detail = numpy_error(lambda: case["Q"] @ case["K"])
    message = shape_trace(detail, case, NAMES, "return Q @ K")
    assert message.msgid == M.SHAPE_MATMUL_FIX
    assert message.render() == (
        "`Q` (n_q=2, d_k=4) @ `K` (n_k=3, d_k=4): the inner axes are 4 (d_k) and 3 (n_k), "
        "they must be equal. Should it be `K.T`?"
    )


def test_np_dot_and_batched_matmul_are_traced_too():
    case = inputs()
    assert (
        shape_trace(numpy_error(lambda: np.dot(case["Q"], case["K"])), case, NAMES, "np.dot(Q, K)").msgid
        == M.SHAPE_MATMUL_FIX
    )
    batched = {k: np.zeros((2, *v.shape)) for k, v in case.items()}
    message = shape_trace(numpy_error(lambda: batched["Q"] @ batched["K"]), batched, NAMES, "s = Q @ K")
    assert "`Q` (2, n_q=2, d_k=4)" in message.render()


def test_q_at_v_is_not_mistaken_for_q_at_k():
    """Same sizes as Q @ K (V has n_k rows too): the failing line tells them apart."""
    case = inputs()
    message = shape_trace(numpy_error(lambda: case["Q"] @ case["V"]), case, NAMES, "return Q @ V")
    assert message.msgid == M.SHAPE_MATMUL and "`V`" in message.render() and ".T" not in message.render()
    unsure = shape_trace(numpy_error(lambda: case["Q"] @ case["V"]), case, NAMES, "")
    assert unsure.msgid == M.SHAPE_MATMUL_AXES, "without the line: the axes, not a guess"


def test_broadcasting_names_the_axes_that_clash():
    case = inputs()
    message = shape_trace(numpy_error(lambda: case["Q"] + case["K"]), case, NAMES)
    assert message.msgid == M.SHAPE_BROADCAST
    assert message.render() == (
        "Shapes (n_q=2, d_k=4) and (n_k=3, d_k=4) cannot be combined element by element: "
        "axis n_q meets axis n_k."
    )


def test_sizes_the_case_does_not_have_give_no_trace():
    """The text comes from the sandbox: sizes that are none of the case's own are never shown."""
    fake = (
        "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
        "(n?,k),(k,m?)->(n?,m?) (size 8123 is different from 4)"
    )
    assert shape_trace(fake, inputs(), NAMES) is None
    fake = "operands could not be broadcast together with shapes (2,4) (8123,4) "
    assert shape_trace(fake, inputs(), NAMES) is None


def test_a_shape_spelled_in_ones_and_known_sizes_is_never_repeated():
    """Bits of a hidden value written as a tuple of 1s and 2s: only the clashing axes are named."""
    fake = "operands could not be broadcast together with shapes (2,1,2,2,1,1,2,1,3) (4,) "
    message = shape_trace(fake, inputs(), NAMES)
    assert message.msgid == M.SHAPE_BROADCAST_AXES
    assert message.params == {"a": "n_k", "b": "d_k"}


@pytest.mark.sandbox
def test_a_hidden_case_shows_the_trace_from_its_own_shapes_and_nothing_else(attention):
    source = "import numpy as np\ndef attention(Q, K, V, mask=None):\n    return Q @ K @ V\n"
    result = attention.grade(source)
    assert result.verdict == Verdict.ERROR, dump(result)
    visible = result.tests[0].message.render()
    assert "`K.T`" in visible and "d_k" in visible, visible
    hidden = next(t for t in result.tests if t.hidden and not t.passed).message
    assert hidden.msgid == M.CASE_SHAPE_ERROR_HIDDEN
    text = hidden.render()
    assert "n_k" in text and "`K.T`" in text, text
    assert "line" not in text


def test_numpys_ellipsis_in_an_index_is_not_a_leftover_placeholder():
    from grader.core.grade import placeholder_lines

    assert placeholder_lines("import numpy as np\ndef f(s):\n    return s[..., 0] + s[..., :2].sum()\n") == []
    assert placeholder_lines("def f(s):\n    x = ...\n    return s[...] @ ...\n") == [2, 3]


def test_a_misspelt_input_in_shape_names_is_a_problem(tmp_path):
    import pytest as _pytest

    from grader.core import SpecError, build_cases, parse_spec

    spec = parse_spec(
        {
            "kind": "function",
            "function": "f",
            "shape_names": {"Qq": ["n_q", "d_k"]},
            "cases": [{"name": "a", "hidden": False, "inputs": {"Q": [[1.0, 2.0]]}}],
        }
    )
    with _pytest.raises(SpecError) as problem:
        build_cases(spec, tmp_path)
    assert problem.value.key == "shape_names.Qq"
