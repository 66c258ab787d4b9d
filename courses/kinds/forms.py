"""Authoring forms of the question kinds: one Django form per kind, for the studio.

A form edits one ``[[questions]]`` table of a questions.toml. ``initial_from_spec(table)``
turns the table into the form's data (what a browser would post), ``spec_from_form()`` turns
the cleaned form back into the table; a table read from a file survives the round trip
unchanged. The repeating parts of a question (options, pairs, blanks, steps…) are formsets
that work without JavaScript: a few empty rows, and a button that adds one more.

These forms only check what a field can check alone (a number is a number). Whether the
question is right is the import's business: the studio runs the import's own checks on the
table and puts what they find back at the fields (``field_for``).
"""

import math
import re
import tomllib
from datetime import datetime
from typing import Any, ClassVar

import tomlkit
from django import forms
from django.forms.formsets import BaseFormSet, formset_factory
from django.utils.translation import gettext_lazy as _

EXTRA_ROWS = 2  # empty rows under a group's filled ones
MAX_ROWS = 40  # more rows than that is a forged form
MARKDOWN_CHARS = 20_000
TEXT_CHARS = 2_000
NUMBER_CHARS = 60
PLACEHOLDER = re.compile(r"^\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}$")
_INTEGER = re.compile(r"^[+-]?\d{1,18}$")
MAX_HINTS = 5


def _markdown(label, *, required: bool = False, rows: int = 3, help_text: Any = "") -> forms.CharField:
    return forms.CharField(
        label=label,
        required=required,
        max_length=MARKDOWN_CHARS,
        strip=False,
        help_text=help_text,
        widget=forms.Textarea(attrs={"rows": rows}),
    )


def _text(label, *, required: bool = False, max_length: int = TEXT_CHARS) -> forms.CharField:
    return forms.CharField(label=label, required=required, max_length=max_length)


def _tag() -> forms.CharField:
    return forms.CharField(label=_("Misconception tag"), required=False, max_length=64)


class ParsedField(forms.CharField):
    """Text in the form, a value in the table: the length is checked on the text, and a row is
    empty when the value is (not when the text differs from nothing)."""

    def __init__(self, *, max_length: int, **kwargs):
        self.text_limit = max_length
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.widget.attrs["maxlength"] = str(max_length)

    def text(self, value) -> str:
        text = "" if value is None else str(value)
        if len(text) > self.text_limit:
            raise forms.ValidationError(
                _("At most %(limit)d characters (it has %(length)d).")
                % {"limit": self.text_limit, "length": len(text)},
                code="max_length",
            )
        return text

    def has_changed(self, initial, data):
        try:
            return self.to_python(data) not in (None, "", [], {})
        except forms.ValidationError:
            return True


class NumberField(ParsedField):
    """A number as a TOML file holds it (an int stays an int), ``0,5`` as well as ``0.5``, or a
    placeholder ``{{ name }}`` of a question with parameters."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", NUMBER_CHARS)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, float):
            return repr(value)
        return value

    def to_python(self, value):
        text = self.text(value).strip()
        if not text:
            return None
        if PLACEHOLDER.match(text):
            return text
        if _INTEGER.match(text):
            return int(text)
        try:
            number = float(text.replace(",", ".") if text.count(",") == 1 and "." not in text else text)
        except ValueError:
            raise forms.ValidationError(
                _("Write a number (0.125 or 0,125) or a placeholder such as {{ name }}."), code="number"
            ) from None
        if not math.isfinite(number):
            raise forms.ValidationError(_("The number must be finite."), code="number")
        return number


class TomlValueField(ParsedField):
    """A TOML value written as in the file (a matrix ``[[1, 2], [3, 4]]``), or a placeholder."""

    def __init__(self, *, kind: type = list, **kwargs):
        self.kind = kind
        kwargs.setdefault("max_length", 8_000)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        super().__init__(**kwargs)

    def to_python(self, value):
        text = self.text(value).strip()
        if not text:
            return None
        if PLACEHOLDER.match(text):
            return text
        try:
            parsed = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            parsed = None
        if not isinstance(parsed, self.kind):
            raise forms.ValidationError(
                _("Write it as in the file, e.g. [[1, 2], [3, 4]], or a placeholder such as {{ name }}."),
                code="toml",
            )
        return parsed


class TomlTableField(ParsedField):
    """The keys of a TOML table, one ``name = value`` a line (a case's inputs)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 64_000)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 3}))
        super().__init__(**kwargs)

    def to_python(self, value):
        text = self.text(value).strip()
        if not text:
            return {}
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise forms.ValidationError(
                _("Write one name = value a line, as in the file: %(error)s") % {"error": exc}, code="toml"
            ) from None


class LinesField(ParsedField):
    """A list of strings, one a line (an empty list: no key)."""

    def __init__(self, label, **kwargs):
        kwargs.setdefault("max_length", 20_000)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2}))
        super().__init__(label=label, **kwargs)

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        return [line.strip() for line in self.text(value).splitlines() if line.strip()]


class NamesField(LinesField):
    """A list of short names, written with commas between them."""

    def __init__(self, label, **kwargs):
        kwargs.setdefault("widget", forms.TextInput())
        kwargs.setdefault("max_length", 2_000)
        super().__init__(label, **kwargs)

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        return [name.strip() for name in self.text(value).split(",") if name.strip()]


# -- rows -----------------------------------------------------------------------------------


class RowFormSet(BaseFormSet):
    """Rows of one group: every row may stay empty (it is then no row), none is "initial"."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra = len(self.initial or []) + EXTRA_ROWS

    def initial_form_count(self):
        return 0

    def filled(self) -> list[forms.Form]:
        """The rows that hold something and are not ticked for removal, in order."""
        return [
            form
            for form in self.forms
            if form.has_changed() and not (self.can_delete and form.is_bound and form["DELETE"].data)
        ]


def row_formset(row_form: type[forms.Form]) -> type[BaseFormSet]:
    return formset_factory(
        row_form,
        formset=RowFormSet,
        extra=EXTRA_ROWS,
        can_delete=True,
        max_num=MAX_ROWS,
        absolute_max=MAX_ROWS,
        validate_max=True,
    )


def _table(cleaned: dict, keys: list[str], *, false_is_absent=True) -> dict:
    """The TOML table of a row: its keys in order, empty ones (and false flags) left out."""
    table = {}
    for key in keys:
        value = cleaned.get(key)
        if value in (None, "", [], {}) or (value is False and false_is_absent):
            continue
        table[key] = value
    return table


class OptionRow(forms.Form):
    text = _markdown(_("Option text"), rows=2)
    correct = forms.BooleanField(label=_("Correct"), required=False)
    id = _text(_("Id (optional)"), max_length=32)
    explanation = _markdown(_("Explanation shown when it is chosen"), rows=2)
    misconception = _tag()
    hint = _markdown(_("Hint when it is chosen"), rows=2)
    keys: ClassVar[list[str]] = ["id", "text", "correct", "explanation", "misconception", "hint"]


class PairRow(forms.Form):
    left = _text(_("Left"))
    right = _text(_("Right"))
    explanation = _markdown(_("Explanation after a right pairing"), rows=2)
    keys: ClassVar[list[str]] = ["left", "right", "explanation"]


class WrongPairRow(forms.Form):
    left = _text(_("Left"))
    right = _text(_("Right"))
    misconception = _tag()
    hint = _markdown(_("Hint"), rows=2)
    keys: ClassVar[list[str]] = ["left", "right", "misconception", "hint"]


class DefaultChoiceField(forms.ChoiceField):
    """A select whose first choice is the default: choosing it alone fills no row."""

    def has_changed(self, initial, data):
        return data not in (None, "", self.choices[0][0])


class BlankRow(forms.Form):
    MODES = [
        ("code", _("code: run and compared")),
        ("exact", _("exact text")),
        ("nocase", _("text, any case")),
        ("regex", _("regular expression")),
    ]
    answer = _text(_("Reference answer"))
    mode = DefaultChoiceField(label=_("Graded as"), choices=MODES, initial="code", required=False)
    accept = LinesField(_("Also accepted (one a line; not for code)"))
    label = _text(_("Label for screen readers"), max_length=200)
    keys: ClassVar[list[str]] = ["answer", "mode", "accept", "label"]


class BlankWrongRow(forms.Form):
    blank = forms.IntegerField(label=_("Blank number"), min_value=1, max_value=MAX_ROWS, required=False)
    pattern = _text(_("Known wrong answer"))
    misconception = _tag()
    hint = _markdown(_("Hint"), rows=2)
    keys: ClassVar[list[str]] = ["pattern", "misconception", "hint"]


class CaseRow(forms.Form):
    name = _text(_("Case name"), max_length=64)
    inputs = TomlTableField(label=_("Inputs (one name = value a line)"))


class WrongValueRow(forms.Form):
    value = NumberField(label=_("Wrong value"))
    misconception = _tag()
    hint = _markdown(_("Hint"), rows=2)
    keys: ClassVar[list[str]] = ["value", "misconception", "hint"]


class WrongMatrixRow(forms.Form):
    matrix = TomlValueField(label=_("Wrong matrix"))
    misconception = _tag()
    hint = _markdown(_("Hint"), rows=2)
    keys: ClassVar[list[str]] = ["matrix", "misconception", "hint"]


class StepRow(forms.Form):
    id = _text(_("Id"), max_length=32)
    text = _markdown(_("Step text"), rows=2)
    explanation = _markdown(_("Explanation once it is placed right"), rows=2)
    after = NamesField(_("Comes after (ids, with commas)"))
    keys: ClassVar[list[str]] = ["id", "text", "explanation"]


class DistractorRow(forms.Form):
    id = _text(_("Id"), max_length=32)
    text = _markdown(_("Step text"), rows=2)
    explanation = _markdown(_("Why it does not belong"), rows=2)
    misconception = _tag()
    keys: ClassVar[list[str]] = ["id", "text", "explanation", "misconception"]


class WrongOrderRow(forms.Form):
    step = _text(_("Step id"), max_length=32)
    before = _text(_("Placed before (id)"), max_length=32)
    misconception = _tag()
    hint = _markdown(_("Hint"), rows=2)
    keys: ClassVar[list[str]] = ["step", "before", "misconception", "hint"]


# -- the question ---------------------------------------------------------------------------


class QuestionForm(forms.Form):
    """What every question has; a kind's form adds its own fields and groups."""

    REVEAL_CHOICES = [
        ("", _("after the first attempt (default)")),
        ("after_first_attempt", _("after the first attempt")),
        ("after_correct", _("after a correct answer")),
        ("always", _("always")),
        ("never", _("never")),
        ("after_attempts", _("after a number of attempts")),
        ("after_date", _("after a date")),
    ]
    COMMON = [
        "slug",
        "kind",
        "order",
        "params",
        "variants",
        "prompt",
        "explanation",
        "reveal",
        "max_attempts",
    ]

    slug = forms.CharField(
        label=_("Slug"),
        max_length=80,
        help_text=_("Lowercase letters and digits joined by hyphens; it never changes."),
    )
    prompt = _markdown(_("Prompt (Markdown with $math$)"), required=True, rows=5)
    explanation = _markdown(_("Explanation shown with the answer"), rows=3)
    reveal = forms.ChoiceField(label=_("Show the answer"), choices=REVEAL_CHOICES, required=False)
    reveal_attempts = forms.IntegerField(
        label=_("Attempts before the answer"), min_value=1, max_value=1000, required=False
    )
    reveal_date = forms.CharField(
        label=_("Date of the answer (2026-12-01T09:00:00+03:00)"), max_length=40, required=False
    )
    max_attempts = forms.IntegerField(
        label=_("Attempts allowed"), min_value=1, max_value=1000, required=False
    )
    order = forms.IntegerField(
        label=_("Position in the lesson"), min_value=0, max_value=100_000, required=False
    )
    params = forms.CharField(
        label=_("Generator in params.py (variants)"),
        max_length=80,
        required=False,
        help_text=_("The name of a function in the lesson's params.py; {{ name }} fills its values in."),
    )
    variants = forms.IntegerField(label=_("Number of variants"), min_value=1, max_value=200, required=False)
    hint_1 = _markdown(_("Hint 1"), rows=2)
    hint_2 = _markdown(_("Hint 2"), rows=2)
    hint_3 = _markdown(_("Hint 3"), rows=2)
    hint_4 = _markdown(_("Hint 4"), rows=2)
    hint_5 = _markdown(_("Hint 5"), rows=2)

    # name -> (row form, title); each is a formset under that prefix.
    groups: ClassVar[dict[str, tuple[Any, Any]]] = {}
    kind_fields: ClassVar[list[str]] = []  # the kind's own keys held by plain fields, in file order

    def __init__(self, data=None, *, kind: str):
        super().__init__(data, prefix="q", label_suffix="")
        self.kind = kind
        self.formsets: dict[str, Any] = {
            name: row_formset(row)(data, prefix=name, form_kwargs={"label_suffix": ""})
            for name, (row, _title) in self.groups.items()
        }
        self.group_errors: dict[str, list[str]] = {}

    def group_list(self) -> list[tuple[str, Any, RowFormSet, list[str]]]:
        """(name, title, formset, errors) of each group, for the template."""
        return [
            (name, title, self.formsets[name], self.group_errors.get(name, []))
            for name, (_row, title) in self.groups.items()
        ]

    def hint_fields(self) -> list[forms.BoundField]:
        return [self[f"hint_{step}"] for step in range(1, MAX_HINTS + 1)]

    def kind_field_list(self) -> list[forms.BoundField]:
        return [self[name] for name in self.kind_fields]

    def is_valid(self) -> bool:
        valid = super().is_valid()
        groups = [formset.is_valid() for formset in self.formsets.values()]  # each one, for its errors
        return valid and all(groups)

    def clean(self):
        cleaned = super().clean()
        rule = cleaned.get("reveal")
        if rule == "after_attempts" and not cleaned.get("reveal_attempts"):
            self.add_error("reveal_attempts", _("Say after how many attempts."))
        if rule == "after_date":
            try:
                cleaned["reveal_moment"] = datetime.fromisoformat(cleaned.get("reveal_date", "").strip())
            except ValueError:
                self.add_error("reveal_date", _("Write a date and time such as 2026-12-01T09:00:00+03:00."))
        return cleaned

    # -- table <-> form ------------------------------------------------------------------
    @classmethod
    def initial_from_spec(cls, table: dict) -> dict:
        """The form's initial values and each group's rows, from a question table."""
        initial: dict[str, Any] = {
            key: table[key]
            for key in ("slug", "prompt", "explanation", "order", "params", "variants", "max_attempts")
            if key in table
        }
        reveal = table.get("reveal")
        if isinstance(reveal, str):
            initial["reveal"] = reveal
        elif isinstance(reveal, dict) and len(reveal) == 1:
            ((rule, argument),) = reveal.items()
            initial["reveal"] = rule
            initial["reveal_attempts" if rule == "after_attempts" else "reveal_date"] = (
                argument.isoformat() if isinstance(argument, datetime) else argument
            )
        for step, text in enumerate(table.get("hints", [])[:MAX_HINTS], start=1):
            initial[f"hint_{step}"] = text
        for name in cls.kind_fields:
            if name in table:
                initial[name] = table[name]
        initial.update(cls.kind_initial(table))
        return initial

    @classmethod
    def kind_initial(cls, table: dict) -> dict:
        """The kind's groups: {group name: [row initial, …]} (and anything else it shows)."""
        return {name: [dict(row) for row in table.get(name, [])] for name in cls.groups}

    def spec_from_form(self) -> dict:
        """The question table: the shared keys, then the kind's (call after is_valid)."""
        cleaned = self.cleaned_data
        table: dict[str, Any] = {"slug": cleaned["slug"], "kind": self.kind}
        for key in ("order", "params", "variants"):
            if cleaned.get(key) not in (None, ""):
                table[key] = cleaned[key]
        table["prompt"] = cleaned["prompt"]
        if cleaned.get("explanation"):
            table["explanation"] = cleaned["explanation"]
        rule = cleaned.get("reveal")
        if rule == "after_attempts":
            table["reveal"] = {"after_attempts": cleaned["reveal_attempts"]}
        elif rule == "after_date":
            table["reveal"] = {"after_date": cleaned["reveal_moment"]}
        elif rule:
            table["reveal"] = rule
        if cleaned.get("max_attempts"):
            table["max_attempts"] = cleaned["max_attempts"]
        hints = [cleaned[f"hint_{step}"] for step in range(1, MAX_HINTS + 1) if cleaned.get(f"hint_{step}")]
        if hints:
            table["hints"] = hints
        for name in self.kind_fields:
            value = cleaned.get(name)
            if not (value is None or value is False or value in ("", [])):  # 0 is a value
                table[name] = value
        table.update(self.kind_spec())
        return table

    def kind_spec(self) -> dict:
        """The kind's groups as tables of the question (call after is_valid)."""
        table = {}
        for name, (row, _title) in self.groups.items():
            entries = [_table(form.cleaned_data, row.keys) for form in self.formsets[name].filled()]
            if entries:
                table[name] = entries
        return table

    # -- the import's problems at their fields ---------------------------------------------
    def field_for(self, keys: tuple) -> tuple[str, str, int | None, str | None]:
        """Where a problem at the table's ``keys`` shows: ("field", name, None, None), ("row",
        group, row index, the row's field or None), ("group", name, None, None) or ("form", …)."""
        head = keys[0] if keys else None
        if head == "hints":
            return ("field", "hint_1", None, None)
        if head in self.groups:
            if len(keys) >= 2 and isinstance(keys[1], int):
                return ("row", head, keys[1], keys[2] if len(keys) > 2 and isinstance(keys[2], str) else None)
            return ("group", head, None, None)
        if isinstance(head, str) and head in self.fields:
            return ("field", head, None, None)
        return ("form", "", None, None)

    def add_problem(self, keys: tuple, message: str) -> None:
        """Show ``message`` (a problem the import found at ``keys``) where it belongs."""
        where, name, index, field = self.field_for(keys)
        if where == "row" and index is not None:
            filled = self.formsets[name].filled()
            if index < len(filled):
                form = filled[index]
                form.add_error(field if field in form.fields else None, message)
                return
            where = "group"
        if where == "group":
            self.group_errors.setdefault(name, []).append(message)
        elif where == "field":
            self.add_error(name, message)
        else:
            self.add_error(None, message)


class ChoiceForm(QuestionForm):
    shuffle = forms.BooleanField(
        label=_("Shuffle the options for each student"), required=False, initial=True
    )
    groups = {"options": (OptionRow, _("Options"))}

    @classmethod
    def kind_initial(cls, table):
        return {**super().kind_initial(table), "shuffle": table.get("shuffle", True)}

    def kind_field_list(self):
        return [self["shuffle"]]

    def kind_spec(self):
        table = super().kind_spec()
        if not self.cleaned_data.get("shuffle"):
            table["shuffle"] = False
        return table


class MatchingForm(QuestionForm):
    distractors = LinesField(_("Distractors: right-hand items that match nothing (one a line)"))
    kind_fields = ["distractors"]
    groups = {
        "pairs": (PairRow, _("Pairs")),
        "wrong_pairs": (WrongPairRow, _("Known wrong pairings")),
    }


class FillInForm(QuestionForm):
    code = forms.CharField(
        label=_("Code with blanks (____)"),
        max_length=MARKDOWN_CHARS,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
    )
    check = NamesField(_("Variables compared after running (with commas)"))
    rtol = NumberField(label=_("Relative tolerance (rtol)"))
    atol = NumberField(label=_("Absolute tolerance (atol)"))
    kind_fields = ["code", "check", "rtol", "atol"]
    groups = {
        "blanks": (BlankRow, _("Blanks")),
        "wrong": (BlankWrongRow, _("Known wrong answers of the blanks")),
        "cases": (CaseRow, _("Hidden cases (inputs the code runs on)")),
    }

    @classmethod
    def kind_initial(cls, table):
        blanks = table.get("blanks", [])
        return {
            "blanks": [{**blank, "mode": blank.get("mode", "code")} for blank in blanks],
            "wrong": [
                {"blank": number, **wrong}
                for number, blank in enumerate(blanks, start=1)
                for wrong in blank.get("wrong", [])
            ],
            "cases": [dict(case) for case in table.get("cases", [])],
        }

    def kind_spec(self):
        blanks = []
        for form in self.formsets["blanks"].filled():
            blank = _table(form.cleaned_data, BlankRow.keys)
            if blank.get("mode") == "code":
                del blank["mode"]
            blanks.append(blank)
        for form in self.formsets["wrong"].filled():
            number = form.cleaned_data.get("blank") or 1
            if number > len(blanks):
                form.add_error("blank", _("There is no blank %(number)s.") % {"number": number})
                continue
            blanks[number - 1].setdefault("wrong", []).append(_table(form.cleaned_data, BlankWrongRow.keys))
        table: dict[str, Any] = {"blanks": blanks} if blanks else {}
        cases = [
            {**_table(form.cleaned_data, ["name"]), "inputs": form.cleaned_data.get("inputs") or {}}
            for form in self.formsets["cases"].filled()
        ]
        if cases:
            table["cases"] = cases
        return table

    def field_for(self, keys):
        if keys[:1] == ("blanks",) and len(keys) >= 4 and keys[2] == "wrong" and isinstance(keys[1], int):
            # blanks[i].wrong[j] is the j-th wrong row naming blank i + 1.
            rows = [
                index
                for index, form in enumerate(self.formsets["wrong"].filled())
                if (form.cleaned_data.get("blank") or 1) == keys[1] + 1
            ]
            if isinstance(keys[3], int) and keys[3] < len(rows):
                return ("row", "wrong", rows[keys[3]], keys[4] if len(keys) > 4 else None)
            return ("group", "wrong", None, None)
        return super().field_for(keys)


class NumericForm(QuestionForm):
    answer = NumberField(label=_("Right answer"), required=True)
    tolerance = NumberField(label=_("Tolerance"), required=True)
    relative = forms.BooleanField(label=_("The tolerance is relative"), required=False)
    unit = _text(_("Unit shown after the input"), max_length=100)
    kind_fields = ["answer", "tolerance", "relative", "unit"]
    groups = {"wrong_values": (WrongValueRow, _("Known wrong values"))}


class MatrixForm(QuestionForm):
    answer = TomlValueField(label=_("Right matrix, as [[1, 2], [3, 4]]"), required=True)
    tolerance = NumberField(label=_("Tolerance per cell"), required=True)
    relative = forms.BooleanField(label=_("The tolerance is relative"), required=False)
    rows = forms.IntegerField(label=_("Rows (a check)"), min_value=1, max_value=8, required=False)
    cols = forms.IntegerField(label=_("Columns (a check)"), min_value=1, max_value=8, required=False)
    row_labels = LinesField(_("Row labels (one a line)"))
    col_labels = LinesField(_("Column labels (one a line)"))
    kind_fields = ["answer", "tolerance", "relative", "rows", "cols", "row_labels", "col_labels"]
    groups = {"wrong": (WrongMatrixRow, _("Known wrong matrices"))}


class OrderingForm(QuestionForm):
    groups = {
        "steps": (StepRow, _("Steps, in one right order")),
        "distractors": (DistractorRow, _("Distractors: steps that do not belong")),
        "wrong_orders": (WrongOrderRow, _("Known wrong orders")),
    }

    @classmethod
    def kind_initial(cls, table):
        initial = super().kind_initial(table)
        after = table.get("after", {}) if isinstance(table.get("after"), dict) else {}
        initial["steps"] = [{**step, "after": after.get(step.get("id"), [])} for step in initial["steps"]]
        return initial

    def kind_spec(self):
        table = super().kind_spec()
        after = {
            form.cleaned_data["id"]: form.cleaned_data["after"]
            for form in self.formsets["steps"].filled()
            if form.cleaned_data.get("after")
        }
        table["after"] = after
        return table

    def field_for(self, keys):
        if keys[:1] == ("after",):
            for index, form in enumerate(self.formsets["steps"].filled()):
                if len(keys) >= 2 and form.cleaned_data.get("id") == keys[1]:
                    return ("row", "steps", index, "after")
            return ("group", "steps", None, None)
        return super().field_for(keys)


def form_data(form_class: type[QuestionForm], initial: dict) -> dict:
    """What a browser posts for a form showing ``initial``: the fields as text, with each
    group's management form."""
    unbound = form_class(kind="")
    data: dict[str, Any] = {}
    for name, field in unbound.fields.items():
        if name in initial:
            data.update(_field_data(unbound.add_prefix(name), field, initial[name]))
    for group, formset in unbound.formsets.items():
        entries = initial.get(group, [])
        data[f"{group}-TOTAL_FORMS"] = str(len(entries) + EXTRA_ROWS)
        data[f"{group}-INITIAL_FORMS"] = "0"
        row_fields = formset.form.base_fields
        for index, entry in enumerate(entries):
            for name, field in row_fields.items():
                if name in entry:
                    data.update(_field_data(f"{group}-{index}-{name}", field, entry[name]))
    return data


def _field_data(key: str, field: forms.Field, value) -> dict:
    if isinstance(field, forms.BooleanField):
        return {key: "on"} if value else {}
    if isinstance(field, TomlValueField) and not isinstance(value, str):
        return {key: toml_literal(value)}
    if isinstance(field, TomlTableField):
        return {key: tomlkit.dumps(value)}
    if isinstance(field, forms.CharField):
        prepared = field.prepare_value(value)
        return {key: prepared if isinstance(prepared, str) else str(prepared)}
    return {key: str(value)}


def toml_literal(value) -> str:
    """A value as TOML writes it inline."""
    return tomlkit.item(value).as_string()
