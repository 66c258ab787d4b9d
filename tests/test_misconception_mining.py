"""Misconception mining: failing students grouped by how they fail; a group of at least five that
the catalogue does not explain is proposed to the course's instructors, with examples, and
exported as a variant file and a TOML stanza an author drops into the exercise folder."""

import json
import shutil
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from courses.models import Course
from grader.core import messages as M
from grader.core.properties import DIAGNOSIS_NAMES
from grader.models import GradeChange, Submission
from instructors import mining

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "courses" / "content" / "attention" / "06-scaled-dot-product" / "attention-function"
SLUG = "attention-function"
SOLUTION = (EXERCISE / "solution.py").read_text(encoding="utf-8")
NO_SCALING = (EXERCISE / "variants" / "no-scaling.py").read_text(encoding="utf-8")
# Not in the catalogue: divides by d_k instead of √d_k. The comment checks that code is escaped.
BY_DK = SOLUTION.replace(
    "    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)\n",
    "    # skorları <b>d_k</b> ile böl\n    S = Q @ np.swapaxes(K, -1, -2) / d_k\n",
)
# The same mistake written differently: the same behaviour, another program.
BY_DK_OTHER = BY_DK.replace(
    "S = Q @ np.swapaxes(K, -1, -2) / d_k", "S = (Q @ np.swapaxes(K, -1, -2)) / Q.shape[-1]"
)
# Not in the catalogue either, but only four students make it.
AXIS_NO_SCALE = SOLUTION.replace(" / np.sqrt(d_k)", "").replace("axis=-1", "axis=0")


def course_folder(root: Path, slug: str) -> Path:
    """A one-lesson course holding a copy of the built-in attention(Q, K, V, mask) exercise."""
    folder = root / slug
    shutil.copytree(EXERCISE, folder / "01-ders" / SLUG)
    (folder / "course.toml").write_text(f'slug = "{slug}"\ntitle = "Kurs {slug}"\n', encoding="utf-8")
    (folder / "01-ders" / "lesson.md").write_text(
        '+++\nslug = "ders"\ntitle = "Attention"\norder = 1\n+++\n\nBir alıştırma.\n', encoding="utf-8"
    )
    return folder


def import_folder(folder: Path, *, grading: bool) -> Course:
    from courses.exercises import check_exercises
    from courses.importer import import_course

    prepare = (lambda source: check_exercises(source, build=True)) if grading else None
    import_course(folder, prepare_exercises=prepare)
    return Course.objects.get(slug=folder.name)


@pytest.fixture
def course(db, tmp_path):
    """The exercise without grading data: for submissions stored with their results directly."""
    return import_folder(course_folder(tmp_path, "madde"), grading=False)


@pytest.fixture
def teacher(make_user, course):
    user = make_user("hoca")
    course.instructors.add(user)
    return user


# --- stored results, as the grader stores them ---------------------------------------------

CASES = [
    ("ornek", False),
    ("iki-boyut", True),
    ("dk-dv-farkli", True),
    ("batch-head", True),
    ("buyuk-skor", True),
    ("causal-2d", True),
    ("maske-2d", True),
    ("causal-batch", True),
    ("maske-batch", True),
    ("padding-batch", True),
]
DIAGNOSIS_MSGID = {name: msgid for msgid, name in reversed(DIAGNOSIS_NAMES.items())}


def stored_tests(failing, properties=(), diagnoses=(), error=""):
    tests = []
    for name, hidden in CASES:
        passed = name not in failing
        message = None
        if not passed:
            message = (
                {"msgid": M.CASE_EXCEPTION_HIDDEN_NO_LINE, "params": {"exc_type": error}}
                if error
                else {"msgid": M.CASE_VALUES_HIDDEN, "params": {"result": "attention(...)"}}
            )
        tests.append({"name": name, "passed": passed, "hidden": hidden, "weight": 1.0, "message": message})
    tests[1]["probe"] = {
        "case": "iki-boyut",
        "hidden": True,
        "matches": not diagnoses,
        "diagnoses": [{"msgid": DIAGNOSIS_MSGID[d], "params": {}} for d in diagnoses],
    }
    tests[1]["properties"] = [{"kind": kind, "passed": False} for kind in properties]
    return tests


def store(user, exercise, failing=("iki-boyut",), *, code="kod", verdict="failed", tag="", **behaviour):
    tests = stored_tests(failing, **behaviour)
    return Submission.objects.create(
        user=user,
        exercise=exercise,
        mode=Submission.Mode.SUBMIT,
        status=Submission.Status.DONE,
        code=code,
        code_hash=Submission.hash_code(code),
        verdict=verdict,
        score=0.0 if verdict != "passed" else 1.0,
        tests=tests,
        message={"msgid": M.SOME_FAILED, "params": {"passed": 10 - len(failing), "total": 10}},
        misconception=tag,
    )


def students(make_user, course, prefix, count):
    """``count`` enrolled students (no password: hashing hundreds would be the test's whole time)."""
    from django.contrib.auth.models import User

    users = User.objects.bulk_create([User(username=f"{prefix}{i}") for i in range(count)])
    for user in users:
        course.enroll(user)
    return users


WRONG_AXIS = {
    "failing": ("batch-head", "causal-batch"),
    "properties": ("shift_keys",),
    "diagnoses": ("wrong_axis",),
}


# --- grouping ------------------------------------------------------------------------------


def test_four_students_are_not_enough_five_are_a_candidate(make_user, course):
    exercise = course.exercises.get()
    group = students(make_user, course, "ogr", 5)
    for user in group[:4]:
        store(user, exercise, **WRONG_AXIS)
    result = mining.mine(exercise)
    assert result.candidates == [] and result.small == 4 and result.students == 4
    store(group[4], exercise, **WRONG_AXIS)
    [candidate] = mining.mine(exercise).candidates
    assert candidate.students == 5
    assert candidate.signature == mining.Signature(
        "failed", ("batch-head", "causal-batch"), ("shift_keys",), ("wrong_axis",)
    )


def test_a_group_the_catalogue_explains_is_not_proposed_and_one_that_only_looks_alike_is(make_user, course):
    exercise = course.exercises.get()
    matched, unmatched = students(make_user, course, "a", 6), students(make_user, course, "b", 5)
    for user in matched:
        store(user, exercise, tag="softmax-wrong-axis", **WRONG_AXIS)
    for user in unmatched:  # the same symptoms, but the grader found other outputs
        store(user, exercise, **WRONG_AXIS)
    result = mining.mine(exercise)
    [known] = result.catalogued
    assert (known.tag, known.students) == ("softmax-wrong-axis", 6)
    [candidate] = result.candidates
    assert candidate.students == 5 and candidate.resembles == ["softmax-wrong-axis"]
    assert candidate.proposed_tag not in mining.catalogue_tags(exercise)


def test_each_student_counts_once_with_their_latest_counted_failing_submission(make_user, course):
    exercise = course.exercises.get()
    users = students(make_user, course, "ogr", 5)
    for user in users:
        store(user, exercise, ("maske-2d",))  # earlier: another mistake
        store(user, exercise, **WRONG_AXIS)
        # Not counted: a run on the examples, a rejected program, the grader's own failure.
        Submission.objects.create(
            user=user, exercise=exercise, mode="run", status="done", code="x", verdict="failed"
        )
        store(user, exercise, ("ornek",), verdict="rejected")
        store(user, exercise, ("ornek",), verdict="internal_error")
    # A student who passed later still shows the mistake they made (their latest failing one).
    store(users[0], exercise, (), verdict="passed")
    # An instructor's preview never counts.
    teacher = make_user("hoca")
    course.instructors.add(teacher)
    preview = store(teacher, exercise, **WRONG_AXIS)
    Submission.objects.filter(pk=preview.pk).update(preview=True)
    result = mining.mine(exercise)
    assert result.students == 5
    [candidate] = result.candidates
    assert candidate.students == 5 and candidate.signature.failing == ("batch-head", "causal-batch")


def test_one_mistake_that_fails_a_case_less_on_another_variant_stays_one_group(
    client, make_user, course, teacher
):
    """Dividing by d_k: on most variants every case fails with the same diagnosis; on one, the
    large scores saturate the softmax (buyuk-skor passes) and a probe only finds "differs"."""
    exercise = course.exercises.get()
    every = [name for name, _ in CASES]
    users = students(make_user, course, "ogr", 9)
    for user in users[:4]:
        store(user, exercise, every, diagnoses=("temperature_flat_sqrt_dk",))
    store(
        users[4],
        exercise,
        [n for n in every if n != "buyuk-skor"],
        diagnoses=("differs", "temperature_flat_sqrt_dk"),
    )
    # The same diagnosis on other cases only is another mistake; so is another diagnosis.
    for user in users[5:7]:
        store(user, exercise, ("maske-2d", "maske-batch"), diagnoses=("temperature_flat_sqrt_dk",))
    for user in users[7:]:
        store(user, exercise, every, diagnoses=("temperature_sqrt_dk",))
    result = mining.mine(exercise)
    [candidate] = result.candidates
    assert candidate.students == 5 and result.small == 4
    assert candidate.signature.failing == tuple(sorted(every))
    assert candidate.case_counts()["buyuk-skor"] == 4 and candidate.case_counts()["ornek"] == 5
    client.force_login(teacher)
    page = client.get(reverse("instructors:mining", args=["madde", SLUG])).content.decode()
    assert (
        '<code>buyuk-skor</code> <span class="muted">(gizli)</span> <span class="muted">[5 öğrenciden 4]</span>'
        in page
    )
    assert "<code>ornek</code>, " in page  # every student fails it: no count


def test_the_exported_program_leaves_out_who_wrote_it(make_user, course):
    """Students sign their work: the author's name, username and e-mail address go from the
    comments; the code stays as written, even where a name is also an identifier."""
    from django.contrib.auth.models import User

    exercise = course.exercises.get()
    author = User.objects.create(
        username="zeynep", first_name="Zeynep", last_name="Kaya", email="zk@okul.edu.tr"
    )
    course.enroll(author)
    signed = (
        "# Zeynep Kaya (zk@okul.edu.tr), ödev 3\n"
        "def attention(Q, K, V, mask=None):\n"
        "    kaya = Q  # zeynep'in denemesi\n"
        "    return kaya\n"
    )
    store(author, exercise, code=signed, **WRONG_AXIS)
    for user in students(make_user, course, "ogr", 4):
        store(user, exercise, code="başka", **WRONG_AXIS)
    [candidate] = mining.mine(exercise).candidates
    assert candidate.examples[0].code == "başka"  # four sent it
    candidate.examples = [next(m for m in candidate.members if m.user_id == author.pk)]
    candidate.examples[0].code = signed
    exported = mining.variant_file(exercise, candidate, "yeni")
    assert exported.endswith(
        "# … … (…), ödev 3\ndef attention(Q, K, V, mask=None):\n    kaya = Q  # …'in denemesi\n    return kaya\n"
    )
    assert "zeynep" not in exported.lower() and "zk@" not in exported


def test_programs_that_never_ran_are_counted_apart(make_user, course):
    exercise = course.exercises.get()
    for user in students(make_user, course, "ogr", 6):
        submission = store(user, exercise, [name for name, _ in CASES], verdict="error")
        Submission.objects.filter(pk=submission.pk).update(
            message={"msgid": M.SYNTAX_COLON, "params": {"line": 3, "context": ""}}
        )
    result = mining.mine(exercise)
    assert result.candidates == [] and result.did_not_run == 6


def test_the_exception_type_and_the_verdict_are_part_of_the_signature(make_user, course):
    exercise = course.exercises.get()
    users = students(make_user, course, "ogr", 10)
    for user in users[:5]:
        store(user, exercise, ("batch-head",), verdict="error", error="ValueError")
    for user in users[5:]:
        store(user, exercise, ("batch-head",), verdict="error", error="IndexError")
    result = mining.mine(exercise)
    assert sorted(c.signature.error for c in result.candidates) == ["IndexError", "ValueError"]
    assert len({c.key for c in result.candidates}) == 2


def test_the_representative_is_the_program_most_of_the_group_sent(make_user, course):
    exercise = course.exercises.get()
    users = students(make_user, course, "ogr", 6)
    for index, user in enumerate(users):
        store(user, exercise, code="ortak" if index < 3 else f"tek {index}", **WRONG_AXIS)
    [candidate] = mining.mine(exercise).candidates
    assert candidate.examples[0].code == "ortak"
    assert len(candidate.examples) == mining.EXAMPLES
    assert len({e.code for e in candidate.examples}) == mining.EXAMPLES  # three different programs


# --- scale: two queries ---------------------------------------------------------------------


def test_hundreds_of_submissions_take_two_queries_and_the_page_a_fixed_number(
    client, make_user, course, teacher
):
    exercise = course.exercises.get()
    kinds = [
        WRONG_AXIS,
        {
            "failing": ("maske-2d", "maske-batch"),
            "properties": ("future_values",),
            "diagnoses": ("masked_weight",),
        },
        {"failing": ("buyuk-skor",), "diagnoses": ("nonfinite",)},
        {"failing": ("batch-head",), "error": "ValueError"},
    ]

    def page_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(reverse("instructors:mining", args=["madde", SLUG])).status_code == 200
        return len(queries)

    client.force_login(teacher)
    users = students(make_user, course, "ogr", 80)
    for index, user in enumerate(users[:20]):
        store(user, exercise, code=f"kod {index}", **kinds[index % 4])
    few = page_queries()
    rows = []
    for index, user in enumerate(users):
        for attempt in range(4):
            kind = kinds[(index + attempt) % 4]
            rows.append(
                Submission(
                    user=user,
                    exercise=exercise,
                    mode="submit",
                    status="done",
                    code=f"kod {index} {attempt}",
                    code_hash=Submission.hash_code(f"kod {index} {attempt}"),
                    verdict="error" if kind.get("error") else "failed",
                    score=0.0,
                    tests=stored_tests(**kind),
                    message={"msgid": M.SOME_FAILED, "params": {"passed": 8, "total": 10}},
                )
            )
    Submission.objects.bulk_create(rows)
    assert Submission.objects.filter(exercise=exercise).count() == 20 + 320
    with CaptureQueriesContext(connection) as queries:
        result = mining.mine(exercise)
    assert len(queries) == 2  # the latest failing submission of each student; the examples' code
    assert result.students == 80 and sum(c.students for c in result.candidates) == 80
    assert page_queries() == few
    with CaptureQueriesContext(connection) as queries:
        counts = mining.candidate_counts([exercise])
    assert len(queries) == 1 and counts[exercise.pk] == (4, 80)


# --- the pages: who may see them ------------------------------------------------------------


def mining_urls(course_slug, key="0123456789ab"):
    return [
        reverse("instructors:mining_course", args=[course_slug]),
        reverse("instructors:mining", args=[course_slug, SLUG]),
        reverse("instructors:mining_export", args=[course_slug, SLUG, key]) + "?etiket=yeni",
    ]


def test_students_and_other_courses_instructors_get_404_and_anonymous_users_log_in(
    client, make_user, course, tmp_path
):
    exercise = course.exercises.get()
    users = students(make_user, course, "ogr", 5)
    for user in users:
        store(user, exercise, code="gizli program", **WRONG_AXIS)
    [candidate] = mining.mine(exercise).candidates
    urls = mining_urls("madde", candidate.key)
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login"))
    client.force_login(users[0])
    for url in urls:
        assert client.get(url).status_code == 404, url
    other = import_folder(course_folder(tmp_path, "baska"), grading=False)
    their_teacher = make_user("baska-hoca")
    other.instructors.add(their_teacher)
    client.force_login(their_teacher)
    for url in urls:
        assert client.get(url).status_code == 404, url
    # Their own course's page: the same exercise slug, none of the other course's students.
    page = client.get(reverse("instructors:mining", args=["baska", SLUG])).text
    assert "gizli program" not in page and "Aday 1" not in page
    # Not one of theirs: back to their list.
    assert client.get(mining_urls("baska", candidate.key)[2]).status_code == 302
    admin = make_user("yonetici", is_staff=True, is_superuser=True)
    client.force_login(admin)
    assert "gizli program" in client.get(urls[1]).text


def test_nothing_is_changed_by_the_pages_and_a_post_is_refused(client, make_user, course, teacher):
    exercise = course.exercises.get()
    for user in students(make_user, course, "ogr", 5):
        store(user, exercise, **WRONG_AXIS)
    [candidate] = mining.mine(exercise).candidates
    before = list(Submission.objects.order_by("pk").values())
    client.force_login(teacher)
    for url in mining_urls("madde", candidate.key):
        assert client.get(url).status_code == 200, url
        assert client.post(url).status_code == 405, url
    assert client.get(mining_urls("madde", candidate.key)[2] + "&indir=py").status_code == 200
    assert list(Submission.objects.order_by("pk").values()) == before
    assert not GradeChange.objects.exists()


def test_the_tag_form_refuses_a_bad_or_catalogued_tag_and_says_why(client, make_user, course, teacher):
    exercise = course.exercises.get()
    for user in students(make_user, course, "ogr", 5):
        store(user, exercise, **WRONG_AXIS)
    [candidate] = mining.mine(exercise).candidates
    client.force_login(teacher)
    url = reverse("instructors:mining_export", args=["madde", SLUG, candidate.key])
    for tag, says in (
        ("Yeni Yanılgı!", "küçük harflerden"),
        ("no-scaling", "“no-scaling” etiketli bir yanılgı zaten var"),
        ("", "Yeni yanılgı için bir etiket yazın"),
        ("a" * 61, "en çok 60 karakter"),
    ):
        response = client.get(url, {"etiket": tag})
        page = response.content.decode()
        assert response.status_code == 200 and says in page, tag
        assert 'aria-invalid="true"' in page and "variants/" not in page
    # A candidate that is gone (its students sent other programs since): back to the list, said so.
    response = client.get(
        reverse("instructors:mining_export", args=["madde", SLUG, "0" * 12]), {"etiket": "x"}
    )
    assert response.status_code == 302 and response.url == reverse("instructors:mining", args=["madde", SLUG])


def test_the_course_page_counts_candidates_per_exercise_and_links_them(client, make_user, course, teacher):
    exercise = course.exercises.get()
    for user in students(make_user, course, "ogr", 5):
        store(user, exercise, **WRONG_AXIS)
    client.force_login(teacher)
    dashboard = client.get(reverse("instructors:dashboard", args=["madde"])).text
    assert reverse("instructors:mining_course", args=["madde"]) in dashboard  # the instructors' nav
    page = client.get(reverse("instructors:mining_course", args=["madde"])).text
    assert "Yeni yanılgı adayları" in page
    assert reverse("instructors:mining", args=["madde", SLUG]) in page
    assert "<strong>1</strong>" in page


# --- end to end: real grading, real export, validate_course -----------------------------------


@pytest.mark.sandbox
def test_five_students_with_an_uncatalogued_mistake_are_proposed_and_exported_for_the_author(
    client, make_user, tmp_path, capsys
):
    """Fourteen students submit through the real sandbox: five divide by d_k (uncatalogued),
    five forget the scaling (catalogued), four take the softmax along the wrong axis without
    scaling (uncatalogued, too few). Only the first group is proposed; its export, dropped into
    a fresh copy of the exercise folder, is a variant validate_course grades and reports."""
    from django.core.management import call_command

    from grader.grading import grade_claimed, submit

    course = import_folder(course_folder(tmp_path, "madde"), grading=True)
    exercise = course.exercises.get()
    teacher = make_user("hoca")
    course.instructors.add(teacher)
    programs = [BY_DK] * 4 + [BY_DK_OTHER] + [NO_SCALING] * 5 + [AXIS_NO_SCALE] * 4
    for index, code in enumerate(programs):
        user = make_user(f"ogrenci{index}")
        course.enroll(user)
        submission = submit(user, exercise, code).submission
        grade_claimed(submission.pk)
    graded = Submission.objects.filter(exercise=exercise)
    assert set(graded.values_list("status", flat=True)) == {"done"}
    assert (
        sorted(graded.exclude(misconception="").values_list("misconception", flat=True)) == ["no-scaling"] * 5
    )
    before = list(graded.order_by("pk").values())

    client.force_login(teacher)
    page = client.get(reverse("instructors:mining", args=["madde", SLUG])).content.decode()
    assert page.count('class="item mining-candidate"') == 1
    assert "Aday 1: 5 öğrenci" in page
    assert "Ağırlıklarınız olması gerekenden yaklaşık 2× daha düz" in page  # the diagnosis students saw
    assert "√d_k yerine d_k&#x27;ya mı böldünüz?" in page
    assert '<code>padding-batch</code> <span class="muted">(gizli)</span>' in page
    assert "&lt;b&gt;d_k&lt;/b&gt;" in page and "<b>d_k</b>" not in page  # the code is escaped
    assert "Program hiç çalışmadı" in page
    # The catalogued group is listed as explained, not proposed; the four are not enough.
    assert "(no-scaling)</span></th><td>5</td>" in page
    [candidate] = mining.mine(exercise).candidates
    # (A student on a variant whose large scores saturate the softmax passes buyuk-skor: still one group.)
    assert candidate.students == 5 and "temperature_flat_sqrt_dk" in candidate.signature.diagnoses
    assert candidate.examples[0].code == BY_DK  # the program four of them sent
    assert {e.code for e in candidate.examples} == {BY_DK, BY_DK_OTHER}
    assert candidate.proposed_tag == "temperature-flat-sqrt-dk"
    assert f'value="{candidate.proposed_tag}"' in page

    export = reverse("instructors:mining_export", args=["madde", SLUG, candidate.key])
    shown = client.get(export, {"etiket": "scale-by-dk"}).content.decode()
    assert "variants/scale-by-dk.py" in shown and "[[misconceptions]]" in shown
    variant = client.get(export, {"etiket": "scale-by-dk", "indir": "py"})
    assert variant["Content-Disposition"] == 'attachment; filename="scale-by-dk.py"'
    stanza = client.get(export, {"etiket": "scale-by-dk", "indir": "toml"})
    assert stanza["Content-Disposition"] == 'attachment; filename="scale-by-dk.toml"'
    variant_text, stanza_text = variant.content.decode(), stanza.content.decode()
    assert variant_text.endswith(BY_DK) and variant_text.startswith("# ")
    for person in Submission.objects.filter(code=BY_DK).select_related("user"):
        assert person.user.username not in variant_text and f"#{person.pk}" not in variant_text
        assert person.user.username not in stanza_text
    assert 'tag = "scale-by-dk"\nfile = "variants/scale-by-dk.py"\n' in stanza_text
    assert "temperature_flat_sqrt_dk" in stanza_text
    assert list(graded.order_by("pk").values()) == before  # exporting changed nothing

    # The author drops both into the exercise folder: validate_course grades the new variant.
    folder = course_folder(tmp_path / "yazar", "madde")
    exercise_dir = folder / "01-ders" / SLUG
    (exercise_dir / "variants" / "scale-by-dk.py").write_text(variant_text, encoding="utf-8")
    toml = exercise_dir / "exercise.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + "\n" + stanza_text, encoding="utf-8")
    capsys.readouterr()
    call_command("validate_course", str(folder), "--json")  # SystemExit(1) on any problem
    summary = json.loads(capsys.readouterr().out)
    assert summary["problems"] == []
    [entry] = [e for e in summary["misconceptions"] if e["tag"] == "scale-by-dk"]
    # What validate_course reports is what the stanza's comments predicted.
    assert entry["diagnoses"] == ["temperature_flat_sqrt_dk"] and entry["properties_broken"] == []
    assert "temperature_flat_sqrt_dk" in stanza_text and "properties broken: —" in stanza_text.replace(
        "bozulan özellikler", "properties broken"
    )


# --- as an instructor sees it ---------------------------------------------------------------

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = ROOT / "test-artifacts" / "pages"


def serious_violations(page) -> list[str]:
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text() + "\n;0")  # evaluated, not a <script>: the page's CSP stays
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{rule['id']}: {rule['help']} ({', '.join(' '.join(n['target']) for n in rule['nodes'][:3])})"
        for rule in result["violations"]
        if rule["impact"] in ("serious", "critical")
    ]


@pytest.mark.browser
@pytest.mark.sandbox
def test_an_instructor_reads_the_candidate_and_exports_it_by_keyboard_in_both_languages_and_widths(
    page, transactional_db, make_user, tmp_path
):
    from grader.grading import grade_claimed, submit

    course = import_folder(course_folder(tmp_path, "madde"), grading=True)
    exercise = course.exercises.get()
    for index, code in enumerate([BY_DK] * 4 + [BY_DK_OTHER] + [NO_SCALING] * 2):
        user = make_user(f"ogrenci{index}")
        course.enroll(user)
        grade_claimed(submit(user, exercise, code).submission.pk)
    course.instructors.add(make_user("hoca", password="Yanilgi-avcisi-2026"))
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill("hoca")
    page.locator("#id_password").fill("Yanilgi-avcisi-2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()

    # From any instructor page, the nav leads to the course's list, then to the exercise.
    page.goto(page.base_url + reverse("instructors:dashboard", args=["madde"]))
    page.get_by_role("link", name="Yeni yanılgı adayları").click()
    page.get_by_role("link", name=exercise.title).click()
    page.get_by_role("heading", name="Aday 1: 5 öğrenci").wait_for()
    # Keyboard only: the tag field by its label, a new tag, Enter.
    field = page.get_by_label("Yeni yanılgının etiketi")
    assert field.input_value() == "temperature-flat-sqrt-dk"
    field.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type("scale-by-dk")
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="variants/scale-by-dk.py").wait_for()
    export_url = page.url
    assert 'tag = "scale-by-dk"' in page.locator("main").inner_text()

    SHOTS.mkdir(parents=True, exist_ok=True)
    found = []
    mining_url = page.base_url + reverse("instructors:mining", args=["madde", SLUG])
    for language in ("tr", "en"):
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width, height in ((1280, 900), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            for name, url in (("mining", mining_url), ("mining-export", export_url)):
                assert page.goto(url).ok
                text = page.locator("main").inner_text()
                assert "&lt;" not in text and "&#x" not in text and "%(" not in text, url
                assert "<b>d_k</b>" in text  # the student's code, as written
                if name == "mining":
                    assert {"tr": "Aday 1: 5 öğrenci", "en": "Candidate 1: 5 students"}[language] in text
                assert page.evaluate("document.documentElement.scrollWidth") <= width, (url, width)
                page.screenshot(path=str(SHOTS / f"instructor-{name}-{language}-{width}.png"), full_page=True)
                found += [f"{url} [{language}, {width}]: {v}" for v in serious_violations(page)]
    assert not found, "axe-core found:\n" + "\n".join(found)


def test_an_exercise_statistics_page_links_to_its_candidates(client, django_user_model):
    from django.urls import reverse

    from courses.models import Course, Exercise

    course = Course.objects.create(slug="baglanti", title="Bağlantı")
    lesson = course.lessons.create(slug="ders", title="Ders", order=1)
    exercise = Exercise.objects.create(
        course=course, lesson=lesson, slug="alistirma", title="Alıştırma", spec={}
    )
    teacher = django_user_model.objects.create_user("ogretmen-baglanti")
    course.instructors.add(teacher)
    client.force_login(teacher)
    page = client.get(reverse("instructors:item", args=[course.slug, "e", exercise.slug])).content.decode()
    assert reverse("instructors:mining", args=[course.slug, exercise.slug]) in page


def export_of_a_program_by_ayse(make_user, course, teacher, client, code: str) -> str:
    """The export page of a candidate whose shown program is Ayşe Yılmaz's ``code`` (every
    program differs: the latest is shown)."""
    from django.contrib.auth.models import User

    exercise = course.exercises.get()
    for index, user in enumerate(students(make_user, course, "ogr", 4)):
        store(user, exercise, code=f"baska = {index}", **WRONG_AXIS)
    author = User.objects.create(
        username="ayse", first_name="Ayşe", last_name="Yılmaz", email="ayse.y@okul.edu.tr"
    )
    course.enroll(author)
    store(author, exercise, code=code, **WRONG_AXIS)
    [candidate] = mining.mine(exercise).candidates
    assert candidate.examples[0].user_id == author.pk
    client.force_login(teacher)
    export = reverse("instructors:mining_export", args=["madde", SLUG, candidate.key])
    return client.get(export, {"etiket": "yeni"}).content.decode()


def test_docstrings_of_the_exported_program_leave_out_who_wrote_it(make_user, course, teacher, client):
    signed = (
        '"""Yazan: Ayşe Yılmaz, 2021"""\n'
        "\n\n"
        "def attention(Q, K, V, mask=None):\n"
        '    """Ödev 3 — ayse.y@okul.edu.tr\n\n    Ayşe\'nin çözümü."""\n'
        '    return Q  # "ayse" imzası\n'
    )
    page = export_of_a_program_by_ayse(make_user, course, teacher, client, signed)
    assert "&quot;&quot;&quot;Yazan: … …, 2021&quot;&quot;&quot;" in page
    assert "&quot;&quot;&quot;Ödev 3 — …\n\n    …&#x27;nin çözümü.&quot;&quot;&quot;" in page
    assert "ayşe" not in page.lower() and "yılmaz" not in page.lower() and "ayse" not in page.lower()
    assert "hâlâ içeriyor" not in page


def test_a_name_left_in_the_exported_code_is_warned_about(make_user, course, teacher, client):
    code = 'def attention(Q, K, V, mask=None):\n    print("Ayşe Yılmaz")\n    return Q\n'
    page = export_of_a_program_by_ayse(make_user, course, teacher, client, code)
    assert "print(&quot;Ayşe Yılmaz&quot;)" in page  # code is left as written
    assert (
        "Program, onu gönderen öğrencinin adını, kullanıcı adını ya da e-posta adresini hâlâ içeriyor" in page
    )
