"""What an instructor reads: item names and Turkish labels, never identifiers; a gradebook that
says it scrolls and keeps the student in view; coloured diffs; a CSV that Excel in Turkish opens."""

import csv
import io
import re
from html import unescape
from pathlib import Path

from django.urls import reverse

from courses.models import Question
from courses.selftest import submit_answer
from grader.models import GradeChange, Submission

ROOT = Path(__file__).resolve().parent.parent


def graded(user, exercise, code: str, verdict: str, score: float, misconception: str = "") -> Submission:
    """A graded submission as a worker leaves it (no sandbox needed to look at pages)."""
    submission = Submission.objects.create(
        user=user,
        exercise=exercise,
        code=code,
        code_hash=Submission.hash_code(code),
        status=Submission.Status.DONE,
        verdict=verdict,
        score=score,
        misconception=misconception,
        graded_hash=exercise.content_hash,
        tests=[{"name": "ornek", "passed": score == 1.0, "hidden": False, "message": None}],
    )
    GradeChange.objects.create(
        submission=submission, verdict=verdict, score=score, misconception=misconception
    )
    return submission


def text_of(html: str) -> str:
    """The page as a person reads it: no tags, no comments, entities decoded."""
    html = re.sub(r"<!--.*?-->|<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_item_page_names_the_exercise_and_says_verdicts_and_misconceptions_in_words(
    client, teacher, make_user, lab
):
    ayse = make_user("ayşe")
    lab.enroll(ayse)
    attn = lab.exercises.get(slug="attn")
    graded(ayse, attn, "a = 1\n", "output_limit", 0.0)
    graded(ayse, attn, "a = 2\n", "failed", 0.0, "no-scaling")
    client.force_login(teacher)
    page = text_of(client.get(reverse("instructors:item", args=["lab", "e", "attn"])).text)
    assert "Attention" in page  # the exercise's title heads the page
    assert "Çıktı sınırı" in page and "Geçmedi" in page
    assert "output_limit" not in page and "failed ·" not in page
    # The misconception reads as its hint, with the tag after it for reference.
    assert "Ölçeklemeyi unutma. (no-scaling)" in page


def test_question_statistics_show_the_hint_of_a_misconception(client, teacher, make_user, quiz):
    question = Question.objects.get(course=quiz, slug="who-attends")
    user = make_user("a1")
    quiz.enroll(user)
    submit_answer(user, question, {"option": "qv"})
    client.force_login(teacher)
    page = text_of(client.get(reverse("instructors:item", args=["quiz", "q", "who-attends"])).text)
    assert "Value'nun ne taşıdığını Value dersinde tekrar okuyun. (value-in-score)" in page
    assert "Soru 1" in page and "tek seçimli" in page


def test_dashboard_lists_items_by_name_and_kind_in_words(client, teacher, quiz):
    client.force_login(teacher)
    page = text_of(client.get(reverse("instructors:dashboard", args=["quiz"])).text)
    for identifier in ("single_choice", "multiple_choice", "fill_in", "who-attends"):
        assert identifier not in page
    assert "Soru 1" in page and "tek seçimli" in page and "çok seçimli" in page and "eşleştirme" in page
    assert "Bir elemanın diğerine ne kadar dikkat edeceği" in page  # the question's own words


def test_gradebook_scrolls_visibly_with_the_student_column_fixed(client, teacher, make_user, quiz):
    zeynep = make_user("zeynep")
    quiz.enroll(zeynep)
    client.force_login(teacher)
    html = client.get(reverse("instructors:gradebook", args=["quiz"])).text
    page = text_of(html)
    assert "Tablo yana kayar" in page and "Öğrenci sütunu yerinde kalır" in page
    assert re.search(r'<th scope="row" class="sticky-col">zeynep</th>', html)
    assert re.search(r'<th scope="col" class="sticky-col"', html)
    headers = re.findall(r'<th scope="col"[^>]*><a [^>]*>([^<]+)</a>', html)
    assert "Soru 1" in headers and "who-attends" not in headers
    assert "1. " in page  # the lesson over its items
    css = (ROOT / "static/css/site.css").read_text()
    rule = re.search(r"\.gradebook \.sticky-col \{([^}]*)\}", css)
    assert rule and "position: sticky" in rule.group(1) and "left: 0" in rule.group(1)


def test_csv_for_turkish_excel_has_semicolons_and_decimal_commas_and_the_same_columns(
    client, teacher, make_user, lab
):
    ayse = make_user("ayşe")
    lab.enroll(ayse)
    attn = lab.exercises.get(slug="attn")
    graded(ayse, attn, "a = 1\n", "passed", 1.0)
    client.force_login(teacher)
    standard = client.get(reverse("instructors:gradebook_csv", args=["lab"])).getvalue()
    excel = client.get(reverse("instructors:gradebook_csv_excel", args=["lab"]))
    assert excel["Content-Type"] == "text/csv; charset=utf-8"
    assert "excel" in excel["Content-Disposition"]
    body = excel.getvalue()
    assert body.startswith("\ufeff".encode())
    rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig")), delimiter=";"))
    standard_rows = list(csv.reader(io.StringIO(standard.decode("utf-8-sig"))))
    assert rows[0] == standard_rows[0]  # same columns, same order
    assert len(rows) == len(standard_rows) == 2
    first = rows[1]
    assert first[0] == "ayşe" and first[4] == "1,00" and first[5:] == ["", "1,00"]
    assert standard_rows[1][4] == "1.00"
    # Both are offered where the gradebook is.
    page = client.get(reverse("instructors:gradebook", args=["lab"])).text
    assert reverse("instructors:gradebook_csv", args=["lab"]) in page
    assert reverse("instructors:gradebook_csv_excel", args=["lab"]) in page


def test_submission_diffs_mark_added_and_removed_lines(client, teacher, make_user, lab):
    ayse = make_user("ayşe")
    lab.enroll(ayse)
    attn = lab.exercises.get(slug="attn")
    graded(ayse, attn, "x = 1\ny = 2\n", "failed", 0.0)
    graded(ayse, attn, "x = 1\ny = 3\n", "passed", 1.0)
    client.force_login(teacher)
    html = client.get(reverse("instructors:submissions", args=["lab", "attn", ayse.pk])).text
    assert re.search(
        r'<span class="diff-line diff-del"><span class="visually-hidden">silindi: </span>-y = 2</span>', html
    )
    assert re.search(
        r'<span class="diff-line diff-add"><span class="visually-hidden">eklendi: </span>\+y = 3</span>', html
    )
    css = (ROOT / "static/css/site.css").read_text()
    assert re.search(r"\.diff-add \{[^}]*var\(--ok-bg\)", css) and re.search(
        r"\.diff-del \{[^}]*var\(--bad-bg\)", css
    )
    page = text_of(html)
    assert "Attention" in page and "attn ·" not in page


def test_test_this_item_and_regrade_pages_name_verdicts(client, teacher, lab):
    from grader.models import ItemCheck

    attn = lab.exercises.get(slug="attn")
    ItemCheck.objects.create(
        exercise=attn,
        status=ItemCheck.Status.DONE,
        runs=[
            {
                "label": "",
                "file": "",
                "verdict": "passed",
                "score": 1.0,
                "misconception": "",
                "hidden_failed": [],
            },
            {
                "label": "no-scaling",
                "file": "variants/no_scaling.py",
                "verdict": "timeout",
                "score": 0.0,
                "misconception": "no-scaling",
                "hidden_failed": [],
            },
        ],
    )
    client.force_login(teacher)
    page = text_of(client.get(reverse("instructors:test_item", args=["lab", "attn"])).text)
    assert "süre sınırı" in page and "geçti" in page and "timeout" not in page and "passed" not in page
    assert "Ölçeklemeyi unutma." in page


def test_dashboard_tables_scroll_inside_their_own_frame(client, teacher, quiz):
    client.force_login(teacher)
    html = client.get(reverse("instructors:dashboard", args=["quiz"])).text
    assert html.count('<div class="table-scroll" tabindex="0" role="region"') == 2
