"""Misconception mining: failing submissions grouped by how they fail, and the groups the
catalogue does not know proposed to the author as new misconceptions.

Each student counts once, with their latest counted failing submission of the exercise. Its
behaviour signature is read from the stored result alone: the verdict, the exception type,
the failing cases (names only, hidden ones too: never their values), the properties it
breaks and the weight-probe diagnoses (their short names, as validate_course reports the
catalogue's). The grader stores a catalogued misconception's tag with a result when the
student's outputs equal that variant's on every failing case (grader.core.misconception_of):
such students are grouped by the tag. The catalogue's own signatures are computed by
validate_course but not stored, so the others are grouped by signature, and a group whose
signature is one that catalogued students had is still proposed (the same symptoms, other
outputs) and says which tags it resembles.

An export is a ``variants/<tag>.py`` file (the group's most common program, its origin in a
comment and nothing about its author) and a ``[[misconceptions]]`` stanza for exercise.toml
with the expected signature as comments (the loader takes no other keys).
"""

import ast
import hashlib
import io
import json
import re
import textwrap
import tokenize
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from django.utils.translation import gettext as _

from courses.authoring import SLUG
from grader.core import Message
from grader.core import Verdict as CoreVerdict
from grader.core import messages as M
from grader.core.grade import SYNTAX_MSGIDS
from grader.core.properties import DIAGNOSIS_NAMES, title_for
from grader.models import VERDICT_LABELS, Submission, Verdict

MIN_STUDENTS = 5  # distinct students a group needs before it is proposed
EXAMPLES = 3  # example submissions shown (and read) per candidate
TAG_MAX = 60  # a misconception tag is stored in a 64-character field
# Signatures with the same core join one group when their failing cases overlap at least this
# much (shared / all, of the two sets): on an exercise with variants, one mistake fails a case on
# one variant that another variant's inputs let it pass (large scores that saturate the softmax).
SAME_CASES = 0.75
# Probe diagnoses that say only that something differs: in the core only when nothing more
# specific was found.
GENERIC_DIAGNOSES = {"differs", "did_not_run"}

# Messages of a program that never got to its function: no misconception about the exercise.
DID_NOT_RUN = SYNTAX_MSGIDS | {
    M.SYNTAX_ERROR,
    M.PLACEHOLDERS_LEFT,
    M.MISSING_FUNCTION,
    M.NOT_CALLABLE,
    M.MODULE_EXCEPTION,
}

# What the signature is computed from: never the code (read for examples only).
_FIELDS = ("pk", "user_id", "exercise_id", "verdict", "misconception", "tests", "message", "code_hash")


@dataclass(frozen=True)
class Signature:
    """How a submission fails, from its stored result."""

    verdict: str
    failing: tuple[str, ...]  # case names, sorted
    properties: tuple[str, ...] = ()  # kinds of the properties broken, sorted
    diagnoses: tuple[str, ...] = ()  # short names of the probe diagnoses, sorted
    error: str = ""  # the exception type of the first failing case that raised one
    did_not_run: bool = False  # a syntax error, the starter's placeholders, no function...

    @property
    def key(self) -> str:
        """A short stable name for URLs (the same signature gives the same key)."""
        text = json.dumps([self.verdict, self.failing, self.properties, self.diagnoses, self.error])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def core(self) -> tuple:
        """What must be equal for two signatures to join a group: all but the failing cases,
        and of the diagnoses the specific ones (a variant's inputs can leave the probe with
        nothing better to say than "differs")."""
        specific = tuple(d for d in self.diagnoses if d not in GENERIC_DIAGNOSES)
        return (self.verdict, self.error, self.properties, specific or self.diagnoses)

    def near(self, other: "Signature") -> bool:
        """The same core and nearly the same failing cases (SAME_CASES)."""
        if self.core != other.core:
            return False
        mine, theirs = set(self.failing), set(other.failing)
        union = mine | theirs
        return not union or len(mine & theirs) / len(union) >= SAME_CASES


def signature_of(verdict: str, tests: list[dict], message: dict | None) -> Signature:
    """The signature of a stored result (Submission.verdict, .tests and .message)."""
    failing = [t for t in tests if isinstance(t, dict) and not t.get("passed")]
    error = ""
    for test in failing:
        params = (test.get("message") or {}).get("params") or {}
        if params.get("exc_type"):
            error = str(params["exc_type"])
            break
    broken = {
        str(p.get("kind", ""))
        for t in tests
        if isinstance(t, dict)
        for p in t.get("properties") or []
        if isinstance(p, dict) and not p.get("passed")
    }
    diagnoses = {
        DIAGNOSIS_NAMES.get(str(d.get("msgid", "")), str(d.get("msgid", "")))
        for t in tests
        if isinstance(t, dict) and isinstance(t.get("probe"), dict)
        for d in t["probe"].get("diagnoses") or []
        if isinstance(d, dict)
    }
    return Signature(
        verdict=verdict,
        failing=tuple(sorted(str(t.get("name", "")) for t in failing)),
        properties=tuple(sorted(broken)),
        diagnoses=tuple(sorted(diagnoses)),
        error=error,
        did_not_run=(message or {}).get("msgid") in DID_NOT_RUN,
    )


@dataclass
class Member:
    """One student's latest failing submission in a group."""

    submission_id: int
    user_id: int
    code_hash: str
    tests: list[dict]
    message: dict | None
    code: str = ""  # read for the examples only


@dataclass
class Group:
    # The signature most of the group has (a catalogued group's: its first member's).
    signature: Signature
    tag: str  # the catalogued misconception the results matched ("": none)
    members: list[Member] = field(default_factory=list)
    signatures: list[Signature] = field(default_factory=list)  # every one in the group
    resembles: list[str] = field(default_factory=list)  # catalogued tags with this signature
    proposed_tag: str = ""
    examples: list[Member] = field(default_factory=list)  # the representative first

    @property
    def students(self) -> int:
        return len(self.members)

    @property
    def key(self) -> str:
        return self.signature.key

    def case_counts(self) -> Counter:
        """How many of the group's students fail each case."""
        return Counter(
            t.get("name", "")
            for m in self.members
            for t in m.tests
            if isinstance(t, dict) and not t.get("passed")
        )

    @property
    def hidden_names(self) -> set[str]:
        """The names of the group's hidden cases (the same in every member's result)."""
        return {t.get("name", "") for t in self.members[0].tests if t.get("hidden")}

    def representative(self) -> Member:
        """The program most members sent word for word; of those, the latest."""
        counts = Counter(m.code_hash for m in self.members)
        return max(self.members, key=lambda m: (counts[m.code_hash], m.submission_id))


@dataclass
class Mining:
    exercise: Any
    students: int = 0  # students whose latest counted submission of it failed at least once
    candidates: list[Group] = field(default_factory=list)  # largest first
    catalogued: list[Group] = field(default_factory=list)  # largest first
    small: int = 0  # students in uncatalogued groups too small to propose
    did_not_run: int = 0  # students whose program never reached its function
    min_students: int = MIN_STUDENTS

    def candidate(self, key: str) -> Group | None:
        return next((g for g in self.candidates if g.key == key), None)


def latest_failing(exercise_ids: list[int]):
    """Each student's latest counted failing submission of each exercise: one query."""
    rank = Window(
        RowNumber(),
        partition_by=[F("exercise_id"), F("user_id")],
        order_by=[F("created_at").desc(), F("pk").desc()],
    )
    return (
        Submission.objects.counted()
        .filter(exercise_id__in=exercise_ids)
        .exclude(verdict=Verdict.PASSED)
        .annotate(rank=rank)
        .filter(rank=1)
        .values(*_FIELDS)
    )


def catalogue_tags(exercise) -> set[str]:
    return {m["tag"] for m in exercise.misconceptions}


def _group(exercise, rows, min_students: int) -> Mining:
    """Group one exercise's rows (from `latest_failing`); reads nothing from the database.

    Students whose results matched a catalogued misconception are grouped by its tag alone:
    on an exercise with variants the same mistake fails other hidden cases on another
    variant, and the tag already says which mistake it is."""
    known = catalogue_tags(exercise)
    unmatched: dict[Signature, Group] = {}
    matched: dict[str, Group] = {}
    tags_of: dict[Signature, set[str]] = defaultdict(set)  # the signatures catalogued ones had
    mining = Mining(exercise=exercise, min_students=min_students)
    for row in rows:
        tests = row["tests"] if isinstance(row["tests"], list) else []
        signature = signature_of(row["verdict"], tests, row["message"])
        mining.students += 1
        if signature.did_not_run:
            mining.did_not_run += 1
            continue
        member = Member(row["pk"], row["user_id"], row["code_hash"], tests, row["message"])
        # A tag the catalogue has dropped since is no longer a known misconception.
        tag = row["misconception"] if row["misconception"] in known else ""
        if tag:
            matched.setdefault(tag, Group(signature, tag)).members.append(member)
            tags_of[signature].add(tag)
        else:
            unmatched.setdefault(signature, Group(signature, "")).members.append(member)
    # Exact signatures, largest first, each joining the first larger group it is near.
    groups: list[Group] = []
    for exact in sorted(unmatched.values(), key=lambda g: (-g.students, g.key)):
        joined = next((g for g in groups if g.signature.near(exact.signature)), None)
        if joined is None:
            exact.signatures = [exact.signature]
            groups.append(exact)
        else:
            joined.members += exact.members
            joined.signatures.append(exact.signature)
    taken = set(known)
    for group in groups:
        if group.students < min_students:
            mining.small += group.students
            continue
        group.resembles = sorted({t for s, tags in tags_of.items() if group.signature.near(s) for t in tags})
        mining.candidates.append(group)

    def order(g: Group) -> tuple:
        return (-g.students, g.signature.failing, g.key, g.tag)

    mining.candidates.sort(key=order)
    mining.catalogued = sorted(matched.values(), key=order)
    for group in mining.candidates:
        group.proposed_tag = proposed_tag(group.signature, taken)
        taken.add(group.proposed_tag)
    return mining


def mine(exercise, *, min_students: int = MIN_STUDENTS, examples: bool = True) -> Mining:
    """Group the exercise's failing students and propose the uncatalogued groups of at least
    ``min_students``; with ``examples``, read the code of up to EXAMPLES submissions of each
    candidate. Two queries, however many submissions there are."""
    mining = _group(exercise, latest_failing([exercise.pk]), min_students)
    if examples and mining.candidates:
        chosen: dict[int, Member] = {}
        for group in mining.candidates:
            first = group.representative()
            group.examples = [first]
            seen = {first.code_hash}
            # Other programs first (the group's variety), newest first.
            for member in sorted(group.members, key=lambda m: -m.submission_id):
                if len(group.examples) < EXAMPLES and member.code_hash not in seen:
                    group.examples.append(member)
                    seen.add(member.code_hash)
            chosen.update((m.submission_id, m) for m in group.examples)
        for pk, code in Submission.objects.filter(pk__in=list(chosen)).values_list("pk", "code"):
            chosen[pk].code = code
    return mining


def candidate_counts(exercises) -> dict[int, tuple[int, int]]:
    """For each exercise: (candidates, failing students), in one query."""
    exercises = list(exercises)
    rows: dict[int, list] = defaultdict(list)
    for row in latest_failing([e.pk for e in exercises]):
        rows[row["exercise_id"]].append(row)
    counts = {}
    for exercise in exercises:
        mining = _group(exercise, rows.get(exercise.pk, []), MIN_STUDENTS)
        counts[exercise.pk] = (len(mining.candidates), mining.students)
    return counts


# --- what the page says about a group ----------------------------------------------------


def describe(group: Group) -> dict[str, Any]:
    """A group's signature in words the instructor reads (translated), with the diagnoses and
    the overall message as its representative's student saw them."""
    signature, hidden = group.signature, group.hidden_names
    shown = group.examples[0] if group.examples else group.representative()
    properties: dict[str, str] = {}
    diagnoses: dict[str, str] = {}
    for test in shown.tests:
        for stored in test.get("properties") or []:
            if not stored.get("passed") and stored.get("kind") not in properties:
                title = title_for(stored)
                properties[stored.get("kind", "")] = title.render(_) if title else stored.get("kind", "")
        probe = test.get("probe") or {}
        for stored in probe.get("diagnoses") or []:
            name = DIAGNOSIS_NAMES.get(stored.get("msgid", ""), stored.get("msgid", ""))
            if name not in diagnoses:
                diagnoses[name] = _render(stored)
    counts = group.case_counts()
    return {
        "verdict": signature.verdict,
        "error": signature.error,
        # Every case some of the group fail; those not all of them fail say how many do.
        "cases": [
            {
                "name": name,
                "hidden": name in hidden,
                "count": counts[name],
                "all": counts[name] == group.students,
            }
            for name in sorted(counts)
        ],
        "students": group.students,
        "properties": [properties.get(kind, kind) for kind in signature.properties],
        "diagnoses": [diagnoses.get(name, name) for name in signature.diagnoses],
        "message": _render(shown.message),
    }


def _render(stored: dict | None) -> str:
    if not isinstance(stored, dict) or not isinstance(stored.get("msgid"), str):
        return ""
    return Message(stored["msgid"], stored.get("params") or {}).render(_)


# --- export ------------------------------------------------------------------------------


def proposed_tag(signature: Signature, taken: set[str]) -> str:
    """A readable default tag from the signature (its diagnoses, else the properties it
    breaks, else its verdict and first failing case), not one in ``taken``."""
    parts = list(signature.diagnoses[:2]) or list(signature.properties[:2])
    if not parts:
        parts = [signature.verdict, *(signature.failing[:1])]
    base = _slug("-".join(parts))[:40].strip("-") or "yanilgi"
    tag, number = base, 2
    while tag in taken:
        tag, number = f"{base}-{number}", number + 1
    return tag


def _slug(text: str) -> str:
    text = text.lower().replace("_", "-")
    text = re.sub(r"[^a-z0-9-]+", "-", text)
    return re.sub(r"-{2,}", "-", text).strip("-")


def tag_problem(tag: str, exercise) -> str | None:
    """Why ``tag`` cannot name a new misconception of ``exercise`` (None when it can)."""
    if not tag:
        return _("Write a tag for the new misconception.")
    if len(tag) > TAG_MAX or not SLUG.match(tag):
        return _(
            "A tag is lowercase letters (a–z) and digits joined by hyphens, at most %(max)d characters, "
            "for example “scale-by-dk”."
        ) % {"max": TAG_MAX}
    if tag in catalogue_tags(exercise):
        return _("The catalogue already has a misconception tagged “%(tag)s”: choose another tag.") % {
            "tag": tag
        }
    return None


WRAP = 88  # the exported files' line length (comments and the hint)


def _comment(text: str, indent: str = "") -> str:
    """``text`` as comment lines of at most WRAP characters (continuations indented)."""
    lines = []
    for paragraph in text.splitlines():
        wrapped = textwrap.wrap(
            paragraph,
            WRAP - 2,
            initial_indent=indent,
            subsequent_indent=indent + "  ",
            break_on_hyphens=False,
        )
        lines += [f"# {line}" for line in wrapped] or ["#"]
    return "\n".join(lines)


def _signature_lines(group: Group) -> list[str]:
    signature, hidden = group.signature, group.hidden_names
    cases = ", ".join(f"{n} ({_('hidden')})" if n in hidden else n for n in signature.failing)
    label = (
        VERDICT_LABELS.get(CoreVerdict(signature.verdict)) if signature.verdict in Verdict.values else None
    )
    verdict = (
        f"{label} ({signature.verdict})" if label and str(label) != signature.verdict else signature.verdict
    )
    lines = [
        _("verdict: %(verdict)s") % {"verdict": verdict},
        _("failing cases: %(cases)s") % {"cases": cases or "—"},
        _("properties broken: %(properties)s") % {"properties": ", ".join(signature.properties) or "—"},
        _("probe diagnoses: %(diagnoses)s") % {"diagnoses": ", ".join(signature.diagnoses) or "—"},
    ]
    if signature.error:
        lines.append(_("exception: %(error)s") % {"error": signature.error})
    return lines


def _shown(group: Group) -> Member:
    return group.examples[0] if group.examples else group.representative()


def variant_file(exercise, group: Group, tag: str, when: datetime | None = None) -> str:
    """``variants/<tag>.py``: the group's representative program under a header that says
    where it came from (the exercise, how many students, when), never who sent it."""
    shown = _shown(group)
    day = timezone.localtime(when or timezone.now()).date().isoformat()
    header = _(
        "Misconception candidate “%(tag)s”, exported from the submissions of exercise “%(exercise)s” "
        "on %(day)s.\nThe latest failing submissions of %(count)d students behave alike; this is the "
        "program most of them sent.\nRead it before you commit it: it is a student's program, and its "
        "comments may need changing."
    ) % {"tag": tag, "exercise": exercise.slug, "day": day, "count": group.students}
    code = _without_author(shown.code.replace("\r\n", "\n"), shown.user_id)
    return _comment(header) + "\n\n" + code.rstrip("\n") + "\n"


def names_author(group: Group, exported: str) -> bool:
    """Whether the exported program still holds the username, a name or the e-mail address of
    the student who sent it: in its code (an identifier, a string) where it is not taken out."""
    pattern = _author_pattern(_shown(group).user_id)
    return pattern is not None and pattern.search(exported) is not None


def _author_pattern(user_id: int) -> re.Pattern[str] | None:
    person = (
        User.objects.filter(pk=user_id).values_list("username", "first_name", "last_name", "email").first()
    )
    words = sorted({str(w) for w in person or () if w and len(str(w)) >= 3}, key=len, reverse=True)
    if not words:
        return None
    return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)


def _without_author(code: str, user_id: int) -> str:
    """``code`` with its author's username, names and e-mail address taken out of its comments
    and docstrings (students sign their work); the code itself is left as it is: a name can be
    an identifier."""
    pattern = _author_pattern(user_id)
    if pattern is None:
        return code
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return code
    docstrings = _docstring_starts(code)
    line_starts = [0]
    for line in code.split("\n"):  # tokenize's lines: split at "\n" only
        line_starts.append(line_starts[-1] + len(line) + 1)

    def offset(position: tuple[int, int]) -> int:
        row, column = position
        return line_starts[row - 1] + column

    signed = [
        t
        for t in tokens
        if t.type == tokenize.COMMENT or (t.type == tokenize.STRING and t.start in docstrings)
    ]
    for token in reversed(signed):  # right to left: earlier offsets stay valid
        start, end = offset(token.start), offset(token.end)
        code = code[:start] + pattern.sub("…", code[start:end]) + code[end:]
    return code


def _docstring_starts(code: str) -> set[tuple[int, int]]:
    """Where each docstring (a string that is the first statement of the module, a function
    or a class) starts, as (line, character column) like tokenize's positions."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    lines = code.split("\n")
    starts = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = node.body[0] if node.body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            line = lines[first.lineno - 1].encode()
            # ast counts columns in UTF-8 bytes, tokenize in characters.
            starts.add((first.lineno, len(line[: first.col_offset].decode(errors="replace"))))
    return starts


def toml_stanza(group: Group, tag: str) -> str:
    """The ``[[misconceptions]]`` entry to append to exercise.toml, with the signature the
    grader should find for the variant (as comments: the loader knows no other keys)."""
    intro = _(
        "Found in %(count)d students' submissions. validate_course should report this behaviour for it:"
    ) % {"count": group.students}
    hint = _("Write here, for the students, what they may have got wrong and what to check.")
    lines = [_comment(intro), *(_comment(line, "  ") for line in _signature_lines(group))]
    lines += [
        "[[misconceptions]]",
        f'tag = "{tag}"',
        f'file = "variants/{tag}.py"',
        # A multi-line string, as the catalogue's other hints (the placeholder has no quote or
        # backslash to escape).
        'hint = """',
        *textwrap.wrap(hint, WRAP),
        '"""',
    ]
    return "\n".join(lines) + "\n"
