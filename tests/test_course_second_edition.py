"""The built-in course never prints an answer before it is asked, and its numbers are right.

Every lesson is rendered as an enrolled student sees it before answering anything. On that
page (outside the item itself) there must be no:

- five or more consecutive non-trivial lines of a graded exercise's reference solution;
- expected output of an exercise's visible case (its numbers in a row, or its printed lines);
- correct answer of a question: a numeric answer, the correct option of a choice question,
  the pairs of a matching question laid out in one table, the filled-in line of a fill-in.

The numeric answers (and the worked numbers the lessons print) are recomputed with NumPy.
"""

import functools
import html
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from django.urls import reverse

COURSE = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"
LESSON_DIRS = sorted(p.parent for p in COURSE.glob("*/lesson.md"))
EXERCISE_DIRS = sorted(p.parent for p in COURSE.glob("*/*/exercise.toml"))


def _front_matter(lesson_dir: Path) -> dict:
    text = (lesson_dir / "lesson.md").read_text(encoding="utf-8")
    return tomllib.loads(text.split("+++")[1])


def _questions(lesson_dir: Path) -> list[dict]:
    found = []
    if (lesson_dir / "questions.toml").is_file():
        found += tomllib.loads((lesson_dir / "questions.toml").read_text(encoding="utf-8"))["questions"]
    for path in (
        sorted((lesson_dir / "questions").glob("*.toml")) if (lesson_dir / "questions").is_dir() else []
    ):
        found.append(tomllib.loads(path.read_text(encoding="utf-8")))
    return found


QUESTIONS = {q["slug"]: (lesson_dir, q) for lesson_dir in LESSON_DIRS for q in _questions(lesson_dir)}


# --- the pages as a student sees them -----------------------------------------------------

_PAGES: dict[Path, str] = {}


@pytest.fixture
def pages(db):
    """lesson folder -> the lesson page's HTML, for an enrolled student who answered nothing.

    Rendered once per test run (the pages are plain strings; each test's database rolls back)."""
    if not _PAGES:
        from django.contrib.auth.models import User
        from django.test import Client

        from courses.importer import import_course
        from courses.models import Course

        import_course(COURSE)
        course = Course.objects.get(slug="attention")
        student = User.objects.create_user("ikinci-baski", password="a-Long-passw0rd")
        course.enroll(student)
        client = Client()
        client.force_login(student)
        for lesson_dir in LESSON_DIRS:
            response = client.get(reverse("lesson", args=["attention", _front_matter(lesson_dir)["slug"]]))
            assert response.status_code == 200, lesson_dir.name
            _PAGES[lesson_dir] = response.text
    return _PAGES


def _article(page: str, anchor: str) -> str:
    """The <article id=anchor> … </article> block of an item (items never nest articles)."""
    start = page.index(f'id="{anchor}"')
    start = page.rindex("<article", 0, start)
    return page[start : page.index("</article>", start) + len("</article>")]


def _prompt(article: str) -> str:
    start = article.index('<div class="prompt">')
    return article[start : article.index("</div>", start)]


def _around(page: str, anchor: str) -> str:
    """The page without the item itself, but with the item's own prompt (what it asks)."""
    article = _article(page, anchor)
    return page.replace(article, _prompt(article))


DECIMAL_COMMA = re.compile(r"<mn>(\d+)</mn><mrow><mo>(?:,|&#x0002C;|&#44;)</mo></mrow><mn>(\d+)</mn>")


def _text(markup: str) -> str:
    """Visible text: scripts and styles dropped, tags become spaces, `0{,}867` in MathML is 0,867."""
    markup = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)
    markup = DECIMAL_COMMA.sub(r"<mn>\1,\2</mn>", markup)
    text = html.unescape(re.sub(r"<[^>]+>", " ", markup))
    return re.sub(r"[ \t\u00a0]+", " ", text)


def _words(text: str) -> str:
    text = text.lower().replace("’", "'")
    return " ".join(re.findall(r"[\w']+", text))


NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def _numbers(text: str) -> list[float]:
    """Every number in the text, sign dropped (code highlighting splits the minus off)."""
    return [float(n.replace(",", ".")) for n in NUMBER.findall(text)]


def _contains_run(haystack: list[float], needle: list[float], tol: float) -> bool:
    n = len(needle)
    return any(
        all(abs(haystack[i + k] - needle[k]) <= tol for k in range(n)) for i in range(len(haystack) - n + 1)
    )


def _code_lines(markup: str) -> list[list[str]]:
    """Each <pre> block on the page as normalised code lines (comments and blank lines dropped)."""
    blocks = []
    for block in re.findall(r"<pre\b.*?</pre>", markup, flags=re.S):
        code = html.unescape(re.sub(r"<[^>]+>", "", block))
        blocks.append([line for line in map(_code_line, code.splitlines()) if line])
    return blocks


def _code_line(line: str) -> str:
    line = re.sub(r"#.*", "", line)  # the course's code never has '#' inside a string
    return re.sub(r"\s+", "", line)


def _trivial(line: str) -> bool:
    return line in {"", "importnumpyasnp", "...", "returnQ", "pass"} or line.startswith(('"""', "'''"))


# --- reference solutions ------------------------------------------------------------------


@pytest.mark.parametrize("folder", EXERCISE_DIRS, ids=lambda p: p.name)
def test_no_five_lines_of_a_reference_solution_on_its_page(pages, folder):
    slug = tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8"))["slug"]
    solution = [
        line
        for line in map(_code_line, (folder / "solution.py").read_text(encoding="utf-8").splitlines())
        if not _trivial(line)
    ]
    windows = {tuple(solution[i : i + 5]) for i in range(len(solution) - 4)}
    page = pages[folder.parent]
    for block in _code_lines(page):
        block = [line for line in block if not _trivial(line)]
        for i in range(len(block) - 4):
            assert tuple(block[i : i + 5]) not in windows, (
                f"{slug}: five lines of the reference solution are on the lesson page:\n"
                + "\n".join(block[i : i + 5])
            )


def test_the_check_itself_finds_a_solution_printed_in_a_lesson():
    solution = "def f(Q, K):\n    d_k = Q.shape[-1]\n    S = Q @ K.T\n    S = S / np.sqrt(d_k)\n    A = np.exp(S)\n    return A\n"
    page = (
        '<pre class="highlight"><code><span class="k">def</span> f(Q, K):\n'
        + "\n".join(solution.splitlines()[1:])
        + "\n</code></pre>"
    )
    lines = [line for line in map(_code_line, solution.splitlines()) if not _trivial(line)]
    [block] = _code_lines(page)
    assert block[:5] == lines[:5]


# --- visible cases ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def visible_outputs():
    """exercise folder -> (spec, [(case name, outputs, stdout)]) for its visible cases."""
    from grader.core import build_cases, parse_spec, run_reference

    found = {}
    for folder in EXERCISE_DIRS:
        spec = parse_spec(tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8")))
        cases = [c for c in build_cases(spec, folder) if not c.hidden]
        ref = run_reference((folder / "solution.py").read_text(encoding="utf-8"), spec, cases)
        found[folder] = [(c.name, ref.outputs[c.name], ref.stdout.get(c.name, "")) for c in cases]
    return found


@pytest.mark.sandbox
@pytest.mark.parametrize("folder", EXERCISE_DIRS, ids=lambda p: p.name)
def test_no_visible_case_answer_on_its_page(pages, visible_outputs, folder):
    slug = tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8"))["slug"]
    assert visible_outputs[folder], f"{slug} has no visible case"
    text = _text(pages[folder.parent])
    numbers = _numbers(text)
    for name, outputs, stdout in visible_outputs[folder]:
        for result, value in outputs.items():
            flat = np.abs(np.asarray(value, dtype=float).ravel())
            if flat.size >= 2:
                # Written with two or three decimals anywhere on the page, in this order.
                assert not _contains_run(numbers, list(flat), 0.006), (
                    f"{slug}: the expected {result} of visible case {name!r} is on the page: {np.round(value, 3)}"
                )
        for line in stdout.splitlines():
            if len(line.strip()) >= 6:
                assert " ".join(line.split()) not in " ".join(text.split()), (
                    f"{slug}: the printed line {line!r} of visible case {name!r} is on the page"
                )


# --- questions ----------------------------------------------------------------------------


def _numeric_found(text: str, answer: float, tolerance: float) -> bool:
    if float(answer).is_integer() and abs(answer) < 10:
        return False  # small whole numbers are everywhere; they say nothing
    return any(abs(n - abs(answer)) <= max(tolerance, 5e-4) for n in _numbers(text))


def _table_rows(markup: str) -> list[str]:
    return [_words(_text(row)) for row in re.findall(r"<tr\b.*?</tr>", markup, flags=re.S)]


def _rendered(markdown: str) -> str:
    from courses.rendering import render_markdown

    return _words(_text(render_markdown(markdown).html))


def answer_problems(page: str, question: dict) -> list[str]:
    """Why this page gives away the question's answer before it is asked (empty: it does not)."""
    around = _around(page, f"q-{question['slug']}")
    text, words = _text(around), _words(_text(around))
    kind, problems = question["kind"], []
    if kind == "numeric":
        if _numeric_found(text, question["answer"], question["tolerance"]):
            problems.append(f"the answer {question['answer']} is on the page")
    elif kind in ("single_choice", "multiple_choice"):
        for option in question["options"]:
            said = _rendered(option["text"])
            if option.get("correct") and len(said.split()) >= 3 and said in words:
                problems.append(f"the correct option {option['text']!r} is on the page")
    elif kind == "matching":
        rows = _table_rows(around)
        given = [
            pair
            for pair in question["pairs"]
            if any(_rendered(pair["left"]) in row and _rendered(pair["right"]) in row for row in rows)
        ]
        if len(given) >= 2:
            problems.append(f"{len(given)} pairs stand side by side in a table on the page")
    elif kind == "fill_in":
        code = [line for block in _code_lines(around) for line in block]
        mode = question["blanks"][0].get("mode", "code")
        answers = iter(b["answer"] for b in question["blanks"])
        filled = re.sub(r"_{4,}", lambda m: next(answers), question["code"])
        lines = [
            line
            for line, template in zip(filled.splitlines(), question["code"].splitlines())
            if re.search(r"_{4,}", template)
        ]
        if mode == "code":
            if lines and all(_code_line(line) in code for line in lines):
                problems.append(f"the filled-in code {lines} is on the page")
        elif all(_words(line.lstrip("# ")) in words for line in lines):
            problems.append(f"the filled-in sentence {lines} is on the page")
    return problems


def _asked(slug: str) -> list[dict]:
    """The question's table as students are asked it: each variant's, filled in with its
    parameters, for a question with a generator (the import made them)."""
    from courses.kinds import get_kind
    from courses.variants import fill_table

    _lesson_dir, question = QUESTIONS[slug]
    if "params" not in question:
        return [question]
    variants = _generated()[slug].variants
    assert len(variants) > 1
    return [fill_table(question, v["params"], get_kind(question["kind"])) for v in variants]


@functools.cache
def _generated() -> dict:
    """The course's questions with their variants made (generators run in the sandbox once)."""
    from courses.authoring import load_course
    from courses.exercises import check_generated_questions

    source = load_course(COURSE)
    assert check_generated_questions(source, prepare=False) == []
    return {q.slug: q for q in source.all_questions()}


@pytest.mark.parametrize("slug", sorted(QUESTIONS), ids=str)
def test_no_question_is_answered_on_its_page(pages, slug):
    lesson_dir, _question = QUESTIONS[slug]
    for question in _asked(slug):
        assert answer_problems(pages[lesson_dir], question) == []


def test_the_answer_check_notices_an_answer_printed_in_the_lesson():
    page = (
        '<article class="lesson"><p>Bir sayı: 0,787 ve <math><mn>0</mn><mrow><mo>&#x0002C;</mo></mrow>'
        "<mn>125</mn></math>.</p><pre><code>skor = Q @ K.T</code></pre>"
        "<table><tr><td>Q</td><td>(n_q, d_k)</td></tr><tr><td>K</td><td>(n_k, d_k)</td></tr></table>"
        "<p>Query ve Key birlikte karar verir.</p></article>"
        '<article class="item question" id="q-x"><div class="prompt">Soru?</div><form>…</form></article>'
    )
    assert answer_problems(page, {"slug": "x", "kind": "numeric", "answer": 0.787, "tolerance": 0.002})
    assert answer_problems(page, {"slug": "x", "kind": "numeric", "answer": 0.125, "tolerance": 0.0005})
    assert not answer_problems(page, {"slug": "x", "kind": "numeric", "answer": 0.5, "tolerance": 0.0005})
    # The decimal comma of $0{,}468$ as the renderer writes it today.
    from courses.rendering import render_markdown

    rendered = page.replace("<p>Bir sayı", render_markdown("Pay $0{,}468$.").html + "<p>Bir sayı")
    assert answer_problems(rendered, {"slug": "x", "kind": "numeric", "answer": 0.4683, "tolerance": 0.002})
    assert answer_problems(
        page, {"slug": "x", "kind": "fill_in", "code": "skor = Q @ ____", "blanks": [{"answer": "K.T"}]}
    )
    assert answer_problems(
        page,
        {
            "slug": "x",
            "kind": "single_choice",
            "options": [{"text": "Query ve Key", "correct": True}, {"text": "Value"}],
        },
    )
    assert answer_problems(
        page,
        {
            "slug": "x",
            "kind": "matching",
            "pairs": [{"left": "Q", "right": "(n_q, d_k)"}, {"left": "K", "right": "(n_k, d_k)"}],
        },
    )


# --- numbers, recomputed with NumPy -------------------------------------------------------


def softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _rotate(angle_degrees: float) -> np.ndarray:
    keys = np.array([[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0]])
    theta = np.deg2rad(angle_degrees)
    return softmax(keys @ np.array([np.cos(theta), np.sin(theta)]))


NUMERIC_ANSWERS = {
    "qkv-output-size": lambda: (softmax(np.zeros((5, 5))) @ np.zeros((5, 16))).size,
    "score-scale-factor": lambda: 1 / np.sqrt(256),
    "sdp-causal-count": lambda: np.tril(np.ones((6, 6), dtype=bool)).sum(),
    "visual-rotate-number": lambda: _rotate(270)[0],
    "multihead-dk": lambda: sum(np.zeros((768, 768 // 12)).size for _ in range(12)),
}


def test_every_numeric_question_has_a_numpy_recomputation():
    """Questions with variants compute their answers with NumPy in params.py, checked per
    variant by test_course_variants."""
    numeric = {slug for slug, (_, q) in QUESTIONS.items() if q["kind"] == "numeric" and "params" not in q}
    assert numeric == set(NUMERIC_ANSWERS)


@pytest.mark.parametrize("slug", sorted(NUMERIC_ANSWERS))
def test_numeric_answer_matches_numpy_and_no_wrong_value_is_right(slug):
    _, question = QUESTIONS[slug]
    value = float(NUMERIC_ANSWERS[slug]())
    assert abs(question["answer"] - value) <= question["tolerance"], (slug, question["answer"], value)
    for wrong in question.get("wrong_values", []):
        assert abs(wrong["value"] - value) > question["tolerance"], (slug, wrong["value"])


def tr(x: float, digits: int) -> str:
    """A number as the lessons write it in math: 0{,}867."""
    return f"{x:.{digits}f}".replace(".", "{,}")


def vec(xs, digits: int) -> str:
    return "(" + r";\ ".join(tr(x, digits) for x in xs) + ")"


def _lesson(prefix: str) -> str:
    [folder] = [d for d in LESSON_DIRS if d.name.startswith(prefix)]
    return (folder / "lesson.md").read_text(encoding="utf-8")


def test_worked_numbers_in_the_lessons_match_numpy():
    from courses.visuals import blend_steps, load_toy_model

    # 02: "onu" against four Keys
    q = np.array([1.0, 2.0])
    K = np.array([[0.5, -1.0], [1.0, 1.5], [0.0, 0.5], [-1.0, 0.0]])
    assert np.allclose(K @ q, [-1.5, 4, 1, -1])
    assert "# [-1.5  4.   1.  -1. ]" in _lesson("02")
    # 03: blending three Values
    V = np.array([[4.0, 0.0], [0.0, 8.0], [2.0, 2.0]])
    assert r"(2{,}5;\ 2{,}5)" in _lesson("03") and np.allclose(np.array([0.5, 0.25, 0.25]) @ V, [2.5, 2.5])
    assert r"(2;\ 3{,}33)" in _lesson("03") and np.allclose(V.mean(axis=0).round(2), [2, 3.33])
    # 04: first row of softmax(Q K^T)
    X = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
    Q, K = X @ np.eye(4)[:, :2], X @ np.eye(4)[:, 1:3]
    assert vec(softmax(Q @ K.T)[0], 3) in _lesson("04")
    # 05: the score table, unscaled and (1, 2, 3)
    five = _lesson("05")
    for weight in softmax(np.array([2.0, 6.0, 1.0]) / 2):
        assert f"| {weight:.3f} |".replace(".", ",") in five
    assert vec(softmax([2.0, 6.0, 1.0]), 3) in five
    assert vec(softmax([1.0, 2.0, 3.0]), 3) in five
    assert f"# {np.round(softmax([1000.0, 999.0]), 3)}" in five
    rng = np.random.default_rng(0)  # the variance experiment, as the lesson runs it
    for d_k in [4, 64, 512]:
        s = (rng.normal(size=(10000, d_k)) * rng.normal(size=(10000, d_k))).sum(axis=-1)
        assert re.search(rf"# {d_k} +{s.var().round(1)} +{(s / np.sqrt(d_k)).var().round(2)}\n", five), d_k
    # 06: one Query, no mask; the causal second row
    six = _lesson("06")
    q, K = np.array([1.0, 1.0]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    s = K @ q / np.sqrt(2)
    a = softmax(s)
    for printed in (np.round(s, 3), np.round(a, 3), np.round(a @ K, 3)):
        assert f"# {printed}" in six
    second = softmax(K[:2] @ K[1] / np.sqrt(2))
    assert vec(second, 2) in six and vec(second @ K[:2], 2) in six
    # 07: the rotation table and the blend example (the figure's toy model)
    seven = _lesson("07")
    for angle in (0, 45, 90, 180):
        assert vec(_rotate(angle), 3) in seven, angle
    model = load_toy_model(next(d for d in LESSON_DIRS if d.name.startswith("07")))
    dere, kahvalti = (blend_steps(model, s) for s in model.sentences)
    assert tr(dere["weights"][0], 3) in seven
    assert vec(dere["mix"], 3) in seven
    assert vec(dere["new"], 2) in seven and vec(kahvalti["new"], 2) in seven
