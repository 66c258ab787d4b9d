"""Language-neutral feedback messages.

The grader never formats text for a language itself: it returns a `Message`
(an English msgid with ``%(name)s`` placeholders plus its parameters).  The
Django side stores both and translates the msgid with gettext; the Turkish
catalogue lives in ``grader/locale/tr/LC_MESSAGES/django.po``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def gettext_noop(s: str) -> str:
    """Mark a msgid for extraction (makemessages/xgettext) without translating it."""
    return s


@dataclass(frozen=True)
class Message:
    """A msgid plus the values for its placeholders."""

    msgid: str
    params: dict[str, Any] = field(default_factory=dict)

    def render(self, translate: Callable[[str], str] = lambda s: s) -> str:
        """Translate the msgid and fill in the parameters.

        A broken translation must not crash feedback, so a formatting error
        falls back to the English msgid.
        """
        text = translate(self.msgid)
        # A parameter may itself be a message (stored as {"msgid", "params"}): translated too.
        params = {}
        for key, value in self.params.items():
            nested = _nested(value)
            params[key] = nested.render(translate) if nested is not None else value
        try:
            return text % params if params else text
        except (KeyError, ValueError, TypeError):
            try:
                return self.msgid % params if params else self.msgid
            except (KeyError, ValueError, TypeError):
                return self.msgid

    def to_dict(self) -> dict[str, Any]:
        return {
            "msgid": self.msgid,
            "params": {k: v.to_dict() if isinstance(v, Message) else v for k, v in self.params.items()},
        }


def _nested(value: Any) -> Message | None:
    if isinstance(value, Message):
        return value
    if (
        isinstance(value, dict)
        and isinstance(value.get("msgid"), str)
        and isinstance(value.get("params", {}), dict)
    ):
        return Message(value["msgid"], value.get("params") or {})
    return None


_ = gettext_noop

# --- rejected before running -------------------------------------------------
SOURCE_EMPTY = _("Your code is empty. Write your solution and submit again.")
SOURCE_TOO_LARGE = _(
    "Your code is %(size)s bytes long; the limit is %(limit)s bytes. Remove unneeded parts and submit again."
)
SOURCE_NUL = _("Your code contains a NUL character. Paste it again as plain text.")
SOURCE_NOT_UTF8 = _("Your code is not valid UTF-8 text. Save it as UTF-8 and submit again.")

# --- overall verdicts --------------------------------------------------------
ALL_PASSED = _("All %(count)s cases passed.")
SOME_FAILED = _("%(passed)s of %(total)s cases passed.")
TIMEOUT_WALL = _(
    "Time limit of %(seconds)s seconds exceeded while running case %(case)s. "
    "Look for an endless loop or a very slow step."
)
TIMEOUT_CPU = _(
    "CPU time limit of %(seconds)s seconds exceeded while running case %(case)s. "
    "Look for an endless loop or a very slow step."
)
TIMEOUT_SETUP = _(
    "Time limit of %(seconds)s seconds exceeded before any case ran. "
    "Look for slow code at the top level of your file."
)
MEMORY_LIMIT = _("Memory limit of %(mb)s MiB exceeded. Avoid building very large arrays or lists.")
OUTPUT_LIMIT = _(
    "Your program printed more than %(limit)s bytes. Print less, for example "
    "only shapes instead of whole arrays."
)
SYNTAX_ERROR = _("Syntax error on line %(line)s: %(detail)s")  # kept for stored feedback
# Syntax errors in plain words (Python's own English text only as a last resort); the
# offending line is shown separately as ``context``.
SYNTAX_UNCLOSED = _("Line %(line)s: the bracket %(bracket)s is opened but never closed.")
SYNTAX_UNMATCHED = _(
    "Line %(line)s: %(bracket)s closes a bracket that was never opened (or is the wrong kind)."
)
SYNTAX_COLON = _(
    "Line %(line)s: a colon (:) is missing at the end of the line; lines starting with def, if, "
    "for or while end with one."
)
SYNTAX_STRING = _("Line %(line)s: a text in quotes is not closed: a quote mark is missing.")
SYNTAX_INDENT = _(
    "Line %(line)s: the indentation does not fit. Indent the body of def, if or for by four "
    "spaces and line up the lines of one block."
)
SYNTAX_CHARACTER = _(
    "Line %(line)s: a character Python does not accept (%(char)s), often from copied text; type it again."
)
SYNTAX_COMMA = _("Line %(line)s: Python cannot read this line; is a comma missing between two values?")
SYNTAX_GENERIC = _("Line %(line)s: Python cannot read this line (Python says: %(detail)s).")
PLACEHOLDERS_LEFT = _(
    "The starter's ... placeholders are still in your code (line %(lines)s): replace each one with your own code."
)
CASE_PLACEHOLDER = _("%(result)s is ... (the starter's placeholder): replace it with your code.")
# Shape traces (traces.py): sizes and names of the case's own inputs only, so hidden cases may show them.
SHAPE_MATMUL_FIX = _(
    "%(left)s @ %(right)s: the inner axes are %(a)s and %(b)s, they must be equal. Should it be %(fix)s?"
)
SHAPE_MATMUL = _("%(left)s @ %(right)s: the inner axes are %(a)s and %(b)s, they must be equal.")
SHAPE_MATMUL_AXES = _("In a matrix product the inner axes are %(a)s and %(b)s; they must be equal.")
SHAPE_BROADCAST = _(
    "Shapes %(left)s and %(right)s cannot be combined element by element: axis %(a)s meets axis %(b)s."
)
SHAPE_BROADCAST_AXES = _("Two arrays cannot be combined element by element: axis %(a)s meets axis %(b)s.")
CASE_SHAPE_ERROR_HIDDEN = _("%(exc_type)s on this hidden case. %(trace)s")
MODULE_EXCEPTION = _("Your code raised %(exc_type)s on line %(line)s before any case ran: %(detail)s")
MISSING_FUNCTION = _("No function named %(function)s was found. Define it with def %(function)s(...):")
NOT_CALLABLE = _("%(function)s is defined, but it is not a function.")
KILLED_BY_SIGNAL = _(
    "Your program was stopped by the operating system (signal %(signal)s) while running case %(case)s."
)
KILLED_BY_SIGNAL_HIDDEN = _(
    "Your program was stopped by the operating system while running hidden case %(case)s."
)
EXITED_EARLY = _(
    "Your program stopped before finishing case %(case)s. Do not call sys.exit(), exit() or os._exit()."
)
ERROR_IN_CASES = _("Your code raised an error in %(count)s of %(total)s cases.")
INTERNAL_ERROR = _(
    "The grader had a problem of its own. This attempt was not counted; please try again in a little while."
)

# --- per case ----------------------------------------------------------------
CASE_SHAPE_NAMED = _("%(result)s has the wrong shape: expected %(names)s = %(expected)s, got %(got)s.")
CASE_SHAPE = _("%(result)s has the wrong shape: expected %(expected)s, got %(got)s.")
CASE_SHAPE_HIDDEN_AXIS = _("%(result)s has the wrong shape on this hidden case: axis %(axis)s differs.")
CASE_NDIM_HIDDEN = _(  # kept for feedback stored before the "got" was dropped
    "%(result)s has the wrong number of axes on this hidden case: expected %(expected)s, got %(got)s."
)
CASE_NDIM_HIDDEN_EXPECTED = _(
    "%(result)s has the wrong number of axes on this hidden case: expected %(expected)s."
)
CASE_COMPLEX = _("%(result)s holds complex numbers, but real numbers are expected.")
CASE_BOOL = _("%(result)s holds True/False values, but numbers are expected.")
CASE_NOT_BOOL = _("%(result)s should hold True/False values, but it has dtype %(dtype)s.")
CASE_NOT_BOOL_HIDDEN = _("%(result)s should hold True/False values on this hidden case.")
CASE_NOT_NUMERIC = _("%(result)s has dtype %(dtype)s, but a numeric array is expected.")
CASE_NOT_ARRAY = _("%(result)s is of type %(type)s; a NumPy array (or a number) is expected.")
CASE_SUBCLASS = _(
    "%(result)s is a subclass of np.ndarray (%(type)s). Return a plain array, for example np.asarray(...)."
)
CASE_OBJECT_DTYPE = _(
    "%(result)s has dtype object. Build it from numbers only, for example with np.array(..., dtype=float)."
)
CASE_RETURNED_NONE = _("The function returned None. Did you forget the return statement?")
CASE_UNDEFINED = _("The variable %(result)s was not defined by your code.")
CASE_TOO_LARGE = _("%(result)s is too large (%(size)s bytes; the limit is %(limit)s bytes).")
# Hidden cases: nothing the sandbox chose (a type's name, a size) is shown, it could carry inputs.
CASE_NOT_ARRAY_HIDDEN = _("%(result)s is not a NumPy array (or a number) on this hidden case.")
CASE_SUBCLASS_HIDDEN = _(
    "%(result)s is a subclass of np.ndarray on this hidden case. Return a plain array, "
    "for example np.asarray(...)."
)
CASE_TOO_LARGE_HIDDEN = _("%(result)s is larger than the limit of %(limit)s bytes on this hidden case.")
CASE_UNREADABLE = _("%(result)s could not be read back: %(reason)s.")
CASE_NONFINITE = _(
    "%(result)s contains NaN or inf (first at index %(index)s). A common cause "
    "is exp() overflowing: subtract the row maximum before exp."
)
CASE_NONFINITE_HIDDEN = _(
    "%(result)s contains NaN or inf on this hidden case. A common cause is "
    "exp() overflowing on large inputs: subtract the row maximum before exp."
)
CASE_VALUES = _(
    "%(result)s has wrong values: the largest absolute error is %(error)s at "
    "index %(index)s (expected %(expected)s, got %(got)s)."
)
CASE_VALUES_HIDDEN = _("%(result)s has wrong values on this hidden case.")
CASE_ROW_SUMS = _(
    "The rows of %(result)s should each sum to 1, but row %(index)s sums to "
    "%(sum)s. Check the axis of your softmax."
)
CASE_ROW_SUMS_HIDDEN = _(
    "The rows of %(result)s do not all sum to 1 on this hidden case. Check the axis of your softmax."
)
CASE_STDOUT = _(
    "The printed output differs from the expected one on line %(line)s: expected %(expected)s, got %(got)s."
)
CASE_STDOUT_HIDDEN = _("The printed output differs from the expected one on this hidden case.")
CASE_EXCEPTION = _("%(exc_type)s on line %(line)s: %(detail)s\n%(traceback)s")
CASE_EXCEPTION_NO_LINE = _("%(exc_type)s: %(detail)s")
CASE_EXCEPTION_HIDDEN = _("%(exc_type)s on line %(line)s (details are not shown for hidden cases).")
CASE_EXCEPTION_HIDDEN_NO_LINE = _("%(exc_type)s was raised (details are not shown for hidden cases).")
CASE_SYSTEM_EXIT = _("Your code called sys.exit() or exit() in this case.")
CASE_MEMORY = _("This case ran out of memory.")
CASE_TIMEOUT = _("This case did not finish within the time limit.")
CASE_NOT_RUN = _("Not run: an earlier problem stopped your program.")
CASE_STOPPED = _("Your program stopped before finishing this case.")
CASE_OUTPUT_LIMIT = _("This case printed more than %(limit)s bytes.")

# --- weight probes (probes.py): the student's weights next to the reference's ------------
# Hidden probes use the texts without numbers (only √d_k, a size of the case's own inputs).
PROBE_SHAPE = _(
    "With V = I your function should return the weight matrix of shape %(expected)s, but it "
    "returned shape %(got)s."
)
# Like a hidden case's shape message: axis names, no sizes.
PROBE_SHAPE_HIDDEN = _(
    "With V = I your function should return the weight matrix, of shape (..., n_q, n_k), but on this "
    "hidden case it returned another shape."
)
PROBE_NOT_REAL = _("With V = I your function should return real weights, but it returned something else.")
PROBE_NONFINITE = _(
    "Your weights contain NaN or inf. A common cause is exp() overflowing: subtract each row's "
    "maximum before exp, and make sure no row is masked completely."
)
PROBE_NEGATIVE = _(
    "Some of your weights are negative (%(value)s at index %(index)s). Softmax weights are never "
    "negative: did exp() go missing, or is the mask subtracted after the softmax?"
)
PROBE_NEGATIVE_HIDDEN = _(
    "Some of your weights are negative on this hidden case. Softmax weights are never negative."
)
PROBE_MASKED = _(
    "Query %(row)s gives weight %(value)s to key %(column)s, a masked position. A masked position "
    "must get exactly zero weight: set its score to −∞ before the softmax (0 is a score like any other)."
)
PROBE_MASKED_HIDDEN = _(
    "Masked positions get weight on this hidden case. A masked position must get exactly zero "
    "weight: set its score to −∞ before the softmax (0 is a score like any other)."
)
PROBE_COLUMNS_SUM = _(
    "Your weights' columns sum to 1 instead of their rows: the softmax runs along the query axis. "
    "Each query spreads its attention over the keys, so take the softmax along the last axis (axis=-1)."
)
PROBE_OTHER_AXIS_SUMS = _(
    "Your weights sum to 1 along axis %(axis)s instead of along the keys: the softmax runs along the "
    "wrong axis. Take it along the last axis (axis=-1, keepdims=True)."
)
PROBE_ROWS_BELOW_ONE_MASK = _(
    "Rows of your weights sum to less than 1: the mask seems to be applied after the softmax. "
    "Apply it to the scores, before the softmax, so the allowed positions share all the weight."
)
PROBE_ROW_SUMS = _(
    "Each row of the weights should sum to 1, but row %(row)s sums to %(sum)s. Divide by the sum "
    "over the keys (axis=-1, keepdims=True)."
)
PROBE_ROW_SUMS_HIDDEN = _("The rows of your weights do not all sum to 1 on this hidden case.")
PROBE_TOO_PEAKED_SQRT_DK = _(
    "Your weights are about %(factor)s× too peaked: √d_k = %(factor)s (d_k = %(d_k)s). Was the "
    "scaling forgotten? Divide the scores by √d_k before the softmax."
)
PROBE_TOO_FLAT_SQRT_DK = _(
    "Your weights are about %(factor)s× too flat: √d_k = %(factor)s (d_k = %(d_k)s). Did you "
    "divide by d_k instead of √d_k?"
)
PROBE_TOO_PEAKED = _(
    "Your weights are about %(factor)s× too peaked: the scores reach the softmax multiplied by a "
    "wrong factor. Check the scaling (divide by √d_k, with d_k from Q or K)."
)
PROBE_TOO_FLAT = _(
    "Your weights are about %(factor)s× too flat: the scores reach the softmax divided by a wrong "
    "factor. Check the scaling (divide by √d_k, with d_k from Q or K)."
)
PROBE_TOO_PEAKED_HIDDEN = _(
    "Your weights are too peaked on this hidden case: check the scaling (divide by √d_k, with d_k "
    "from Q or K)."
)
PROBE_TOO_FLAT_HIDDEN = _(
    "Your weights are too flat on this hidden case: check the scaling (divide by √d_k, with d_k from Q or K)."
)
PROBE_DIFFERS = _(
    "Your weights differ from the expected ones: at index %(index)s expected %(expected)s, got %(got)s."
)
PROBE_DIFFERS_HIDDEN = _("Your weights differ from the expected ones on this hidden case.")
PROBE_DID_NOT_RUN = _("The weights could not be read (V = I): %(reason)s")

# --- property cases (properties.py): relations checked on the student's own outputs ------
PROPERTY_TITLE_PERMUTE_KEYS = _("Keys and values reordered together")
PROPERTY_TITLE_SHIFT_KEYS = _("One vector added to every key")
PROPERTY_TITLE_SHIFT_ROWS = _("One number added to each row of scores")
PROPERTY_TITLE_FUTURE_VALUES = _("A masked position's key and value changed")
PROPERTY_TITLE_FUTURE_SCORES = _("Future scores (above the diagonal) changed")
PROPERTY_TITLE_SCALE_VALUES = _("V multiplied by %(factor)s")
PROPERTY_PERMUTE_KEYS = _(
    "Reordering the keys and the values together (the same way) changed your output. Attention "
    "treats the keys as a set: each query mixes the values by its own score with each key, in any "
    "order. Keep every key paired with its own value and take the softmax over the keys."
)
PROPERTY_SHIFT_KEYS = _(
    "Adding the same vector c to every key changed your output. That adds q·c to every score of a "
    "row, one constant per row, and the softmax of a row does not change when the whole row is "
    "shifted. Check that the softmax runs along the keys (the last axis) and subtracts each row's maximum."
)
PROPERTY_SHIFT_ROWS = _(
    "Adding one number to every score of a row changed your output, but the softmax of a row does "
    "not change when the whole row is shifted. Check that the softmax runs along the last axis."
)
PROPERTY_FUTURE_VALUES = _(
    "Changing only the key and value at a masked position changed the output of queries that may "
    "not look there. A masked position must get exactly zero weight: set its score to −∞ before "
    "the softmax (not 0, and not after it)."
)
PROPERTY_FUTURE_SCORES = _(
    "Changing only the scores above the diagonal (the future) changed your weights. Under a causal "
    "mask those positions get exactly zero weight whatever their score: set them to −∞ before the "
    "softmax, not after it."
)
PROPERTY_SCALE_VALUES = _(
    "Multiplying V by %(factor)s should multiply your output by %(factor)s: the output is a weighted "
    "sum of the rows of V. Does your function return A @ V, with nothing added to it?"
)
PROPERTY_DETAIL = _("%(result)s changed most at index %(index)s (by %(error)s).")
PROPERTY_CHANGED_CASE_FAILED = _("On the changed input your code gave no result: %(reason)s")
REFERENCE_BREAKS_PROPERTY = _("The reference solution breaks a declared property: %(problems)s")
