"""The "Kontrol et" (check) of an exercise's drafts, through the queue and the real sandbox: the checks of
validate_course on the files as they are (the reference passes every case, every catalogued
misconception fails a hidden case), per case and per misconception on the page; a publish
that changes an exercise is refused until exactly its current files passed a check."""

import html

import pytest
from django.urls import reverse

from studio import drafts, structure
from studio.models import ExerciseCheck

pytestmark = pytest.mark.django_db(transaction=True)

FOLDER = "02-second/ikiyle-carp"
MISCONCEPTION = """
[[misconceptions]]
tag = "no-doubling"
file = "variants/no_doubling.py"
hint = "Her öğeyi 2 ile çarptınız mı?"
"""


@pytest.fixture
def teacher(client, mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    client.force_login(user)
    structure.create_exercise(mini_course, "02-second", "ikiyle-carp", "İkiyle çarp", user)
    return user


def _add_variant(course, user, body: str) -> None:
    toml = f"{FOLDER}/exercise.toml"
    drafts.save_draft(course, toml, drafts.read_text(course, toml) + MISCONCEPTION, user)
    drafts.save_draft(
        course, f"{FOLDER}/variants/no_doubling.py", f"def scale(x):\n    return {body}\n", user
    )


def _check(client, run_queue) -> tuple[ExerciseCheck, str]:
    response = client.post(reverse("studio:start_check", args=["mini", FOLDER]))
    assert response.status_code == 302
    waiting = html.unescape(client.get(response.url).text)
    assert "sırada bekliyor" in waiting and 'http-equiv="refresh"' in waiting
    run_queue()
    check = ExerciseCheck.objects.latest("pk")
    return check, html.unescape(client.get(response.url).text)


def test_publish_waits_for_a_passing_check_of_the_exercise_as_it_is_now(
    client, mini_course, teacher, run_queue
):
    refused = client.post(reverse("studio:publish", args=["mini"]))
    assert refused.status_code == 400
    assert f"{FOLDER}/exercise.toml:1" in refused.text
    assert "şimdiki hâli bir kontrolden geçmedi" in html.unescape(refused.text)
    _add_variant(mini_course, teacher, "x * 3")

    check, page = _check(client, run_queue)

    assert check.status == "done" and check.passed, check.report
    assert "Her şey geçti" in page
    cases = {case["name"]: (case["hidden"], case["passed"]) for case in check.report["cases"]}
    assert cases == {
        "ornek": (False, True),
        "gizli-0": (True, True),
        "gizli-1": (True, True),
        "gizli-2": (True, True),
    }
    [variant] = check.report["misconceptions"]
    assert variant["tag"] == "no-doubling" and variant["caught"] and "gizli-0" in variant["failed"]
    assert "✓ yakalandı" in page
    editor = html.unescape(client.get(reverse("studio:edit", args=["mini", f"{FOLDER}/solution.py"])).text)
    assert "✓ geçti" in editor and "Kontrol et" in editor
    assert "kontrolden geçti" in html.unescape(client.get(reverse("studio:outline", args=["mini"])).text)

    # One more change after the check: the publish is refused again until it is checked.
    starter = drafts.read_text(mini_course, f"{FOLDER}/starter.py")
    drafts.save_draft(mini_course, f"{FOLDER}/starter.py", "def scale(x):\n    pass\n", teacher)
    assert drafts.unchecked(mini_course) == [FOLDER]
    assert drafts.publish(mini_course, teacher).problems[0].file == f"{FOLDER}/exercise.toml"
    drafts.save_draft(mini_course, f"{FOLDER}/starter.py", starter, teacher)  # as it was checked

    published = drafts.publish(mini_course, teacher)
    assert published.problems == []
    run_queue()
    exercise = mini_course.exercises.get(slug="ikiyle-carp")
    assert exercise.lesson.slug == "second" and exercise.misconceptions[0]["tag"] == "no-doubling"


def test_a_misconception_the_cases_do_not_catch_fails_the_check_and_the_publish(
    client, mini_course, teacher, run_queue
):
    _add_variant(mini_course, teacher, "x + x")  # the same as the reference: no case can catch it

    check, page = _check(client, run_queue)

    assert check.status == "done" and check.passed is False
    assert any(
        "no-doubling" in p["message"] and "passes every hidden case" in p["message"]
        for p in check.report["problems"]
    )
    assert f"{FOLDER}/exercise.toml:" in page and "✗ yakalanmadı" in page
    assert drafts.publish(mini_course, teacher).problems[0].file == f"{FOLDER}/exercise.toml"
    assert not mini_course.exercises.exists()


def test_a_reference_that_fails_its_own_cases_is_shown_case_by_case(client, mini_course, teacher, run_queue):
    drafts.save_draft(mini_course, f"{FOLDER}/solution.py", "def scale(x):\n    return 1 / 0\n", teacher)

    check, page = _check(client, run_queue)

    assert check.passed is False
    assert any(p["file"] == f"{FOLDER}/solution.py" for p in check.report["problems"])
    assert check.report["cases"] and not any(case["passed"] for case in check.report["cases"])
    assert "✗ geçmedi" in page
    refused = client.post(reverse("studio:publish", args=["mini"]))
    assert refused.status_code == 400 and f"{FOLDER}/exercise.toml:1" in refused.text
    assert not mini_course.exercises.exists() and not mini_course.revisions.exists()
