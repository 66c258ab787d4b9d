"""What a student reads is text, not markup: no character references shown as such
(``&#x00028;``, ``&amp;``), no LaTeX left as ``$…$``, in lessons, questions, options,
labels and the feedback after answering; every number in an attribute a number."""

import json
import re
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

COURSE = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"

# Text a reader should never see: references left over after one round of decoding, and
# TeX between dollars (with a backslash, a subscript or a caret inside: not prices).
ESCAPED = re.compile(r"&(#x?[0-9a-fA-F]+|amp|lt|gt|quot);")
RAW_MATH = re.compile(r"\$[^$\n]*[\\_^][^$\n]*\$")
# Attributes that hold one number a browser must read: SVG geometry, progress and meter values.
NUMBER_ATTRIBUTES = {
    "x",
    "y",
    "x1",
    "x2",
    "y1",
    "y2",
    "cx",
    "cy",
    "r",
    "rx",
    "ry",
    "width",
    "height",
    "stroke-width",
    "opacity",
    "fill-opacity",
    "font-size",
    "value",
    "max",
    "min",
    "low",
    "high",
    "optimum",
}
NUMBER = re.compile(r"-?(\d+(\.\d*)?|\.\d+)([eE]-?\d+)?(%|px|em|rem)?")
TURKISH_DECIMAL = re.compile(r"-?\d+,\d+")


class _Reader(HTMLParser):
    """Collects what a person reads (text nodes, option labels, aria-labels, alt, title) and
    every attribute, with references decoded once, as a browser does."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "template"):
            self._skip += 1
        for name, value in attrs:
            value = value or ""
            self.attributes.append((tag, name, value))
            if name in ("aria-label", "alt", "title", "placeholder"):
                self.texts.append(value)

    def handle_endtag(self, tag):
        if tag in ("script", "style", "template") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.texts.append(data)


def read(page: str) -> _Reader:
    reader = _Reader()
    reader.feed(page)
    return reader


def unreadable_text(page: str) -> list[str]:
    """The pieces of text a reader would see as markup or as TeX."""
    return [text.strip() for text in read(page).texts if ESCAPED.search(text) or RAW_MATH.search(text)]


def bad_numbers(page: str) -> list[str]:
    """Numbers written the Turkish way ("100,5") where a browser or a script reads a number,
    and data blocks that are not JSON."""
    found = []
    for tag, name, value in read(page).attributes:
        name = name.lower()
        if tag in ("svg", "rect", "line", "circle", "text", "progress", "meter", "g", "path", "polygon") or (
            tag == "input" and name in ("min", "max", "step")
        ):
            if name in NUMBER_ATTRIBUTES and not NUMBER.fullmatch(value.strip()):
                found.append(f"<{tag} {name}={value!r}>")
        if name.startswith("data-") and TURKISH_DECIMAL.fullmatch(value.strip()):
            found.append(f"<{tag} {name}={value!r}>")
    for block in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, flags=re.S):
        try:
            json.loads(block)
        except ValueError as exc:
            found.append(f"JSON: {exc}")
    return found


def test_the_number_check_finds_localized_numbers():
    assert bad_numbers(
        '<svg><rect width="100,0" x="0"></rect></svg><progress value="0,5" max="1"></progress>'
        '<td data-value="0,250">'
    ) == ["<rect width='100,0'>", "<progress value='0,5'>", "<td data-value='0,250'>"]
    assert bad_numbers('<svg><rect width="100.0" height="10"></rect></svg><td data-value="0.25">') == []


def write_course(root: Path, questions: str, lesson: str = "Ders metni.") -> Path:
    folder = root / "yazili"
    (folder / "01-ders").mkdir(parents=True)
    (folder / "course.toml").write_text(
        'slug = "yazili"\ntitle = "Yazılı"\nsummary = "Deneme."\n', encoding="utf-8"
    )
    (folder / "01-ders" / "lesson.md").write_text(
        '+++\nslug = "ders"\ntitle = "Ders"\norder = 1\nsummary = "Deneme."\n+++\n\n'
        + textwrap.dedent(lesson),
        encoding="utf-8",
    )
    (folder / "01-ders" / "questions.toml").write_text(textwrap.dedent(questions), encoding="utf-8")
    return folder


@pytest.fixture
def written(db, tmp_path, alice, client):
    """Import a one-lesson course written by the test; the client is an enrolled student."""
    from courses.importer import import_course
    from courses.models import Course

    def make(questions: str, lesson: str = "Ders metni."):
        import_course(write_course(tmp_path, questions, lesson))
        course = Course.objects.get(slug="yazili")
        course.enroll(alice)
        client.force_login(alice)
        return client.get(reverse("lesson", args=["yazili", "ders"])).text

    return make


MATCHING = """
    [[questions]]
    slug = "shapes"
    kind = "matching"
    prompt = "Eşleştirin."
    reveal = "always"
    distractors = ["$(n_q, n_q)$"]

    [[questions.pairs]]
    left = "$V$"
    right = "$(n_k, d_v)$"

    [[questions.pairs]]
    left = "$A = \\\\text{softmax}(S)$"
    right = "Q & K < 1"
"""


def test_matching_options_show_formulas_and_symbols_as_text_not_references(written):
    page = written(MATCHING)
    options = [text.strip() for text in read(page).texts]
    assert "(n_k, d_v)" in options
    assert "(n_q, n_q)" in options
    assert "Q & K < 1" in options
    labels = [value for tag, name, value in read(page).attributes if tag == "select" and name == "aria-label"]
    assert labels == ["V", "A = softmax(S)"]
    assert unreadable_text(page) == []


def test_matching_chips_carry_the_rendered_formula(written):
    page = written(MATCHING)
    chips = page[page.index("<template data-chips>") : page.index("</template>")]
    assert chips.count('class="chip"') == 3
    assert "<math" in chips and "&amp;#" not in chips


def test_table_cell_that_starts_with_a_formula_and_ends_with_a_digit_renders_the_formula(written):
    page = written(
        "",
        lesson="""
        | Kavram | Özelliği |
        |---|---|
        | Ağırlık | $0 \\le a_{ij} \\le 1$, her satırın toplamı 1 |

        $x$ ile başlayan ve 2 ile biten bir paragraf 2
    """,
    )
    assert unreadable_text(page) == []
    assert page.count("<math") == 2


def test_prices_stay_text(written):
    page = written("", lesson="Bir kahve $5, iki kahve $10 eder.\n")
    assert "$5, iki kahve $10" in page


# --- the built-in course, as a student reads it ----------------------------------------------


@pytest.fixture
def course_pages(db, alice, settings):
    """Every lesson page of the built-in course: before answering, and with every question
    answered (first option / first right item / 1) and its answer shown."""
    from courses.importer import import_course
    from courses.kinds import get_kind
    from courses.models import Course, Question
    from courses.selftest import reveal_answer, submit_answer

    settings.ANSWER_RATE_LIMIT = 1000
    import_course(COURSE)
    course = Course.objects.get(slug="attention")
    course.enroll(alice)
    client = Client()
    client.force_login(alice)
    lessons = list(course.active_lessons())
    pages = {f"{lesson.slug} (new)": client.get(lesson.get_absolute_url()).text for lesson in lessons}
    for question in Question.objects.filter(course=course):
        spec = question.ask_for(alice).spec  # her own variant, for a question with variants
        answer = {
            "single_choice": lambda spec=spec: {"option": spec["options"][0]["id"]},
            "multiple_choice": lambda spec=spec: {"options": [spec["options"][0]["id"]]},
            "matching": lambda spec=spec: {
                "pairs": {left["id"]: spec["rights"][0]["id"] for left in spec["lefts"]}
            },
            "numeric": lambda: {"value": "1"},
        }.get(question.kind)
        if answer is None or get_kind(question.kind).code_runs(spec):
            continue
        submit_answer(alice, question, answer())
        reveal_answer(alice, question)
    pages |= {f"{lesson.slug} (answered)": client.get(lesson.get_absolute_url()).text for lesson in lessons}
    pages["İlerlemem"] = client.get(reverse("dashboard")).text
    return pages


def test_every_lesson_of_the_course_reads_as_text(course_pages):
    problems = {name: found for name, page in course_pages.items() if (found := unreadable_text(page))}
    assert problems == {}


def test_every_number_in_an_attribute_of_the_course_is_a_number(course_pages, settings):
    problems = {name: found for name, page in course_pages.items() if (found := bad_numbers(page))}
    assert problems == {}
