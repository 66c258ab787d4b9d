"""Instructors and per-student variants: the variant a student got (its parameters, an
exercise's hidden inputs) in the pages that show one student's work, statistics split by
variant with a much harder variant said in words, and "test this item" for one variant or all.
Students never reach any of it."""

import re
from dataclasses import replace
from html import unescape
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

from courses.kinds import get_kind
from courses.models import AnswerPreview, Attempt, Course, Question, QuestionVariant
from grader import bundles
from grader import regrade as regrades
from grader.core import load_bundle, save_bundle
from grader.grading import exercise_bundle
from grader.models import Submission

pytestmark = [pytest.mark.django_db]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def varyant(db):
    call_command("import_course", "tests/fixtures/variants", verbosity=0)
    return Course.objects.get(slug="varyant")


@pytest.fixture
def hoca(make_user, varyant):
    user = make_user("hoca")
    varyant.instructors.add(user)
    return user


def text_of(html: str) -> str:
    """The page as a person reads it: no tags, no scripts or styles, entities decoded."""
    html = re.sub(r"<!--.*?-->|<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def answer(user, variant: QuestionVariant, value: float, when_offset: int = 0) -> Attempt:
    """A numeric answer graded on ``variant`` as the student's page grades it (no sandbox)."""
    kind = get_kind(variant.question.kind)
    assert kind is not None
    cleaned = kind.clean_answer(variant.spec, {"value": str(value)})
    grade = kind.grade(variant.spec, cleaned)
    return Attempt.objects.create(
        user=user,
        question=variant.question,
        variant=variant,
        answer=cleaned,
        score=grade.score,
        correct=grade.correct,
        feedback=grade.feedback,
        misconceptions=grade.misconceptions,
    )


def enrolled(make_user, course, name):
    """An enrolled student without a password (hashing one costs more than the page tested)."""
    user = User.objects.create(username=name)
    course.enroll(user)
    return user


# --- one student's work ------------------------------------------------------------------


def test_the_instructor_sees_the_variant_a_student_got_with_its_parameters(client, hoca, make_user, varyant):
    question = Question.objects.get(course=varyant, slug="dot-score")
    ayse = enrolled(make_user, varyant, "ayşe")
    mine = question.variant_for(ayse)
    other = QuestionVariant.objects.get(question=question, index=(mine.index + 1) % 6, current=True)
    answer(ayse, mine, mine.params["score"] + 1)
    answer(ayse, mine, mine.params["score"])
    client.force_login(hoca)
    # The gradebook's cell for the question leads to her answers.
    gradebook = client.get(reverse("instructors:gradebook", args=["varyant"])).text
    url = reverse("instructors:attempts", args=["varyant", "dot-score", ayse.pk])
    assert f'href="{url}"' in gradebook
    response = client.get(url)
    assert response.status_code == 200
    page = text_of(response.text)
    assert f"Öğrencinin varyantı: Varyant {mine.index + 1} / 6" in page
    # Her parameters as a table, q and k as one-row matrices; the seed for reproducing it.
    html = response.text
    q_row = "".join(f"<td>{n}</td>" for n in mine.params["q"])
    assert q_row in html and 'aria-label="q, 3 elemanlı vektör"' in html
    assert f"score {mine.params['score']}" in page
    assert str(mine.seed) in page
    assert f"Komut satırında: --variant {mine.index}" in page  # the commands count from 0
    # Both answers say which variant they were graded on; the right one is marked right.
    assert page.count(f"Varyant {mine.index + 1} / 6") >= 3
    assert "✓ Doğru" in page and "✗ Doğru değil" in page
    # The prompt as she reads it: her numbers, not another variant's.
    assert mine.prompt_html in html
    assert other.prompt_html not in html


def test_an_answer_graded_on_a_variant_no_longer_asked_shows_that_variant(client, hoca, make_user, varyant):
    question = Question.objects.get(course=varyant, slug="dot-score")
    ayse = enrolled(make_user, varyant, "ayşe")
    mine = question.variant_for(ayse)
    old = QuestionVariant.objects.create(
        question=question,
        index=mine.index,
        seed=1,
        params={"q": [9, 9, 9], "k": [1, 1, 1], "score": 27},
        prompt_html="<p>eski soru</p>",
        spec={**mine.spec, "answer": 27.0},
        digest="eski",
        current=False,
    )
    answer(ayse, old, 27)
    client.force_login(hoca)
    response = client.get(reverse("instructors:attempts", args=["varyant", "dot-score", ayse.pk]))
    page = text_of(response.text)
    assert "Bu cevap şu varyantta notlandırıldı" in page
    assert "artık sorulmuyor" in page
    assert "<td>9</td><td>9</td><td>9</td>" in response.text


def test_students_and_other_instructors_never_reach_these_pages(client, make_user, varyant, hoca):
    ayse = enrolled(make_user, varyant, "ayşe")
    question = Question.objects.get(course=varyant, slug="dot-score")
    answer(ayse, question.variant_for(ayse), 1)
    urls = [
        reverse("instructors:attempts", args=["varyant", "dot-score", ayse.pk]),
        reverse("instructors:item", args=["varyant", "q", "dot-score"]),
        reverse("instructors:test_question", args=["varyant", "dot-score"]),
        reverse("instructors:test_question", args=["varyant", "dot-score"]) + "?varyant=2",
    ]
    for user in (ayse, make_user("baska-hoca")):
        client.force_login(user)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 404, url
            assert "Varyant" not in response.text
        response = client.post(urls[2], {"varyant": "2", "value": "1"})
        assert response.status_code == 404
    assert not AnswerPreview.objects.exists()
    client.logout()
    assert client.get(urls[0]).status_code == 302  # to the log-in page


# --- statistics by variant ----------------------------------------------------------------


def _hard_variant_course(make_user, varyant, hard_index: int = 2):
    """dot-score answered by five students on each variant, all right on their first try,
    except on ``hard_index``: six students, five wrong first (one of them never right)."""
    question = Question.objects.get(course=varyant, slug="dot-score")
    variants = {v.index: v for v in QuestionVariant.objects.filter(question=question, current=True)}
    n = 0
    for index, variant in variants.items():
        right = variant.params["score"]
        for k in range(6 if index == hard_index else 5):
            n += 1
            user = enrolled(make_user, varyant, f"ogrenci{n}")
            if index == hard_index and k < 5:
                answer(user, variant, right + 1)
                if k:
                    answer(user, variant, right)
            else:
                answer(user, variant, right)
    return question


def test_statistics_split_by_variant_and_say_which_variant_is_much_harder(client, hoca, make_user, varyant):
    _hard_variant_course(make_user, varyant, hard_index=2)
    client.force_login(hoca)
    response = client.get(reverse("instructors:item", args=["varyant", "q", "dot-score"]))
    html, page = response.text, text_of(response.text)
    assert "Varyanta göre" in page
    rows = re.findall(r'<tr[^>]*data-variant="(\d+)"[^>]*>(.*?)</tr>', html, flags=re.S)
    assert [number for number, _row in rows] == ["1", "2", "3", "4", "5", "6"]
    cells = {number: text_of(row) for number, row in rows}
    # Variant 3: six students, ten answers, one right first; five of six right in the end (0,83).
    assert cells["3"].startswith("3 ⚠ çok daha zor %17 0,83 6 10 q = ")
    assert "çok daha zor" not in cells["1"] and "%100" in cells["1"]
    # The parameters of each variant, in a line.
    q = QuestionVariant.objects.get(question__slug="dot-score", index=0, current=True).params["q"]
    assert f"q = [{' '.join(map(str, q))}]" in cells["1"]
    # Said in words above the table, not only by the row's colour.
    assert (
        "Bir varyant diğerlerinden çok daha zor: Varyant 3: ilk denemede %17 doğru, diğer varyantlarda %100"
        in page
    )
    # Bars for the first-try success: SVG lengths with a dot, whatever the language.
    widths = re.findall(r'<rect[^>]*width="([^"]+)"', html)
    assert widths and all(re.fullmatch(r"\d+(\.\d+)?", w) for w in widths)
    assert "17" in widths and "100" in widths
    # A variant's number shows the page's figures for that variant alone.
    assert '<a href="?varyant=3">3</a>' in html
    page = text_of(
        client.get(reverse("instructors:item", args=["varyant", "q", "dot-score"]) + "?varyant=3").text
    )
    assert "Aşağıdaki sayılar yalnızca Varyant 3 / 6 için." in page
    assert "Deneyen öğrenciler 6 Denemeler 10 İlk denemede başarı %17" in page
    page = text_of(
        client.get(reverse("instructors:item", args=["varyant", "q", "dot-score"]) + "?varyant=1").text
    )
    assert "Deneyen öğrenciler 5 Denemeler 5 İlk denemede başarı %100" in page
    assert "En sık yanlış cevaplar" not in page  # variant 1's answers were all right


def test_a_variant_with_few_students_or_a_small_gap_is_not_marked(client, hoca, make_user, varyant):
    question = Question.objects.get(course=varyant, slug="dot-score")
    variants = {v.index: v for v in QuestionVariant.objects.filter(question=question, current=True)}
    n = 0
    for index, variant in variants.items():
        for k in range(5):
            n += 1
            user = enrolled(make_user, varyant, f"o{n}")
            # Variant 1: four of five wrong, but the others are wrong as often: no gap.
            wrong = k < 4 if index == 0 else k < 3
            answer(user, variant, variant.params["score"] + (1 if wrong else 0))
    # Variant 2: two more students wrong; still a small gap and few students.
    client.force_login(hoca)
    page = text_of(client.get(reverse("instructors:item", args=["varyant", "q", "dot-score"])).text)
    assert "Varyanta göre" in page
    assert "çok daha zor" not in page.replace("“çok daha zor”", "")


def test_statistics_by_variant_in_english(client, hoca, make_user, varyant):
    _hard_variant_course(make_user, varyant, hard_index=0)
    client.force_login(hoca)
    client.cookies["django_language"] = "en"
    response = client.get(reverse("instructors:item", args=["varyant", "q", "dot-score"]))
    page = text_of(response.text)
    assert "By variant" in page
    assert "One variant is much harder than the others: Variant 1: 17% right on the first try" in page
    assert "1 ⚠ much harder 17% 0.83 6 10 q = " in page
    widths = re.findall(r'<rect[^>]*width="([^"]+)"', response.text)
    assert "17" in widths


# --- "test this item" -----------------------------------------------------------------------


def test_the_test_page_lists_every_variant_and_answers_the_one_chosen(client, hoca, varyant):
    question = Question.objects.get(course=varyant, slug="dot-score")
    variants = list(QuestionVariant.objects.filter(question=question, current=True).order_by("index"))
    url = reverse("instructors:test_question", args=["varyant", "dot-score"])
    client.force_login(hoca)
    # The dashboard leads here, and says how many variants the question has.
    dashboard = client.get(reverse("instructors:dashboard", args=["varyant"])).text
    assert f'href="{url}"' in dashboard and "6 varyant" in text_of(dashboard)
    page = text_of(client.get(url).text)
    # All of them: each variant's parameters and right answer.
    for variant in variants:
        assert f"Varyant {variant.index + 1} / 6: cevaplayın" in page
        assert f"score = {variant.params['score']}" in page
    third = variants[2]
    chosen = client.get(url + "?varyant=3")
    assert chosen.status_code == 200
    html = chosen.text
    assert third.prompt_html in html and variants[0].prompt_html not in html
    assert '<option value="3" selected>' in html
    assert 'name="value"' in html  # the form a student answers with
    # The right answer of variant 3 is right on variant 3...
    response = client.post(url, {"varyant": "3", "value": str(third.params["score"])})
    assert response.status_code == 302 and "varyant=3" in response.url
    shown = AnswerPreview.objects.get()
    assert shown.correct
    assert "Doğru!" in text_of(client.get(response.url).text)
    # ... and wrong on variant 1 (unless both have the same score), recorded nowhere.
    if variants[0].params["score"] != third.params["score"]:
        response = client.post(url, {"varyant": "1", "value": str(third.params["score"])})
        assert not AnswerPreview.objects.latest("pk").correct
        assert "Doğru değil" in text_of(client.get(response.url).text)
    assert not Attempt.objects.exists()


@pytest.mark.sandbox
@pytest.mark.django_db(transaction=True)
def test_a_code_blank_answered_on_the_test_page_is_graded_on_the_variant_chosen(
    client, hoca, varyant, run_queue
):
    second = QuestionVariant.objects.get(question__slug="rows-fill", index=1, current=True)
    url = reverse("instructors:test_question", args=["varyant", "rows-fill"])
    client.force_login(hoca)
    html = client.get(url + "?varyant=2").text
    assert second.prompt_html in html and 'name="blank-0"' in html
    response = client.post(url, {"varyant": "2", "blank-0": "Q.shape[0]"})
    shown = AnswerPreview.objects.get()
    assert shown.variant == second and shown.is_pending  # a worker runs the code, not this request
    assert "Kodunuz korumalı alanda çalışıyor" in text_of(client.get(response.url).text)
    run_queue()
    shown.refresh_from_db()
    assert shown.correct
    assert "Doğru!" in text_of(client.get(response.url).text)
    assert not Attempt.objects.exists()


def test_the_test_page_refuses_a_variant_the_question_does_not_have(client, hoca, varyant):
    url = reverse("instructors:test_question", args=["varyant", "dot-score"])
    client.force_login(hoca)
    page = text_of(client.get(url + "?varyant=99").text)
    assert "Varyant 1 / 6: cevaplayın" in page  # the list of every variant instead
    response = client.post(url, {"varyant": "99", "value": "1"})
    assert response.status_code == 302 and not AnswerPreview.objects.exists()
    # Digits that are not ASCII ("²" is a digit to str.isdigit, not to int) are no variant either.
    assert "Varyant 1 / 6: cevaplayın" in text_of(client.get(url + "?varyant=%C2%B2").text)
    assert client.get(url + "?varyant=1&onizleme=%C2%B2").status_code == 200
    item = reverse("instructors:item", args=["varyant", "q", "dot-score"])
    assert client.get(item + "?varyant=%C2%B2").status_code == 200


# --- exercises: the student's hidden inputs -------------------------------------------------


def _variant_exercise(lab, count: int = 3):
    """The lab's exercise with ``count`` variants whose hidden inputs differ: the grading data
    of variant i is the exercise's own with its inputs times (i + 1) * 10."""
    exercise = lab.exercises.get(slug="attn")
    type(exercise).objects.filter(pk=exercise.pk).update(variant_count=count)
    exercise.refresh_from_db()
    base = exercise_bundle(exercise)
    spec, _cases, _ref = bundles.load(exercise.spec, base)
    for index in range(1, count):
        cases, ref = load_bundle(base)
        cases = [
            replace(case, inputs={name: array * (index + 1) * 10 for name, array in case.inputs.items()})
            for case in cases
        ]
        target = bundles.variant_dir(base, index)
        if not (target / "manifest.json").exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            save_bundle(target, spec, cases, ref)
    return exercise


@pytest.mark.sandbox
def test_the_submission_browser_shows_the_students_variant_and_its_hidden_inputs(client, make_user, lab):
    teacher = make_user("hoca")
    lab.instructors.add(teacher)
    exercise = _variant_exercise(lab)
    ayse = make_user("ayşe")
    lab.enroll(ayse)
    index = exercise.variant_index(ayse)
    submission = Submission.objects.create(
        user=ayse,
        exercise=exercise,
        code="x = 1\n",
        code_hash=Submission.hash_code("x = 1\n"),
        status=Submission.Status.DONE,
        verdict="failed",
        score=0.0,
        variant=index,
        variant_seed=424242,
        graded_hash=exercise.content_hash,
    )
    _spec, cases, _ref = bundles.load(exercise.spec, bundles.variant_dir(exercise_bundle(exercise), index))
    hidden = [case for case in cases if case.hidden]
    client.force_login(teacher)
    response = client.get(reverse("instructors:submissions", args=["lab", "attn", ayse.pk]))
    html, page = response.text, text_of(response.text)
    assert f"Öğrencinin varyantı: Varyant {index + 1} / 3" in page
    assert "424242" in page  # its seed
    assert "Bu varyantın gizli girdileri" in page
    for case in hidden:
        assert case.name in page
    # The first hidden input's first row, as the page writes numbers (decimal commas).
    array = next(iter(hidden[0].inputs.values()))
    first = np.atleast_2d(array)[0][:3]
    texts = [f"{v:.4g}".replace(".", ",").replace("-", "\u2212") for v in first]
    assert "".join(f"<td>{t}</td>" for t in texts) in html
    # A regrade's table says which variant each submission is graded on.
    regrade = regrades.start(exercise, teacher, None)
    page = text_of(client.get(reverse("instructors:regrade", args=["lab", regrade.pk])).text)
    assert "Öğrenci Gönderim Varyant Önce" in page and f"ayşe #{submission.pk} {index + 1} " in page
    # A student asking for the page gets nothing.
    client.force_login(ayse)
    response = client.get(reverse("instructors:submissions", args=["lab", "attn", ayse.pk]))
    assert response.status_code == 404 and "gizli" not in response.text


@pytest.mark.sandbox
def test_an_exercises_statistics_split_by_the_variant_each_submission_was_graded_on(client, make_user, lab):
    teacher = make_user("hoca")
    lab.instructors.add(teacher)
    exercise = _variant_exercise(lab)
    for n in range(18):
        student = User.objects.create(username=f"s{n}")
        lab.enroll(student)
        index, passed = n % 3, not (n % 3 == 1 and n % 6 != 1)  # variant 2: three of six pass
        Submission.objects.create(
            user=student,
            exercise=exercise,
            code="x\n",
            code_hash=Submission.hash_code("x\n"),
            status=Submission.Status.DONE,
            verdict="passed" if passed else "failed",
            score=1.0 if passed else 0.3,
            variant=index,
            variant_seed=1000 + index,
            graded_hash=exercise.content_hash,
        )
    client.force_login(teacher)
    html = client.get(reverse("instructors:item", args=["lab", "e", "attn"])).text
    rows = dict(re.findall(r'<tr[^>]*data-variant="(\d+)"[^>]*>(.*?)</tr>', html, flags=re.S))
    assert text_of(rows["1"]) == "1 %100 1,00 6 6 1000"
    assert text_of(rows["2"]) == "2 ⚠ çok daha zor %50 0,65 6 6 1001"
    assert "çok daha zor" not in text_of(rows["3"])
    page = text_of(client.get(reverse("instructors:item", args=["lab", "e", "attn"]) + "?varyant=2").text)
    assert "Deneyen öğrenciler 6 Denemeler 6 İlk denemede başarı %50" in page
    assert "geçmedi 3" in page.lower()


@pytest.mark.sandbox
def test_the_exercise_test_page_checks_the_variant_chosen_or_all(client, make_user, lab):
    from grader.models import ItemCheck

    teacher = make_user("hoca")
    lab.instructors.add(teacher)
    _variant_exercise(lab)
    url = reverse("instructors:test_item", args=["lab", "attn"])
    client.force_login(teacher)
    page = text_of(client.get(url).text)
    assert "hepsi (3 varyant)" in page and "Varyant 3 / 3" in page
    # One variant: every program is graded against that variant's hidden cases.
    response = client.post(url, {"varyant": "2"})
    assert response.status_code == 302 and response.url.endswith("?varyant=2")
    check = ItemCheck.objects.get()
    assert {program["variant"] for program in check.programs} == {1}
    # Its hidden inputs are on the page, under the variant's name.
    page = text_of(client.get(response.url).text)
    assert "Seçilen varyant: Varyant 2 / 3" in page and "Bu varyantın gizli girdileri" in page
    # All of them: each program against each variant.
    ItemCheck.objects.all().delete()
    client.post(url, {"varyant": "hepsi"})
    check = ItemCheck.objects.get()
    assert sorted({program["variant"] for program in check.programs}) == [0, 1, 2]
    # The results say which variant each run was graded on.
    runs = [
        {**{k: program[k] for k in ("label", "file", "variant")}, "verdict": "passed", "score": 1.0}
        for program in check.programs
    ]
    ItemCheck.objects.filter(pk=check.pk).update(status=ItemCheck.Status.DONE, runs=runs)
    page = text_of(client.get(url + "?varyant=hepsi").text)
    assert "Gizli durumlar: her varyant (3)." in page
    assert page.count("Varyant 3 / 3") >= 1 + len(check.programs) // 3


# --- in a browser: the statistics by variant, in Turkish and English, wide and narrow ---------

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = ROOT / "test-artifacts" / "pages"


def _serious_violations(page) -> list[str]:
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text() + "\n;0")  # evaluated, not a <script>: the CSP stays strict
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{rule['id']}: {rule['help']}"
        for rule in result["violations"]
        if rule["impact"] in ("serious", "critical")
    ]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_statistics_by_variant_draw_their_bars_in_both_languages_and_at_phone_width(page, make_user, varyant):
    from playwright.sync_api import expect

    _hard_variant_course(make_user, varyant, hard_index=2)
    teacher = make_user("hoca", password="Hoca-parola-2026")
    varyant.instructors.add(teacher)
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill("hoca")
    page.locator("#id_password").fill("Hoca-parola-2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = {}
    for language, words in (("tr", ("Varyanta göre", "çok daha zor")), ("en", ("By variant", "much harder"))):
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(page.base_url + reverse("instructors:item", args=["varyant", "q", "dot-score"]))
            expect(page.get_by_role("heading", name=words[0])).to_be_visible()
            hard = page.locator("tr[data-variant='3']")
            expect(hard).to_contain_text(words[1])
            # Each bar as long as its share: the hard variant's a sixth of an easy one's.
            easy_bar = page.locator("tr[data-variant='1'] rect").bounding_box()
            hard_bar = hard.locator("rect").bounding_box()
            assert easy_bar and hard_bar and easy_bar["width"] > 0
            assert hard_bar["width"] == pytest.approx(easy_bar["width"] / 6, rel=0.1)
            # The page itself never scrolls sideways; the table scrolls in its own frame.
            assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
            page.screenshot(path=str(SHOTS / f"variant-stats-{language}-{width}.png"), full_page=True)
            if AXE.exists():
                found[f"{language} {width}"] = _serious_violations(page)
    assert not {name: v for name, v in found.items() if v}
