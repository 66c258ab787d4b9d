"""Questions edited through their kind's form in the authoring area: every kind's form gives
back the table it was filled from, the import's own checks refuse a bad question at its
field and save nothing, a saved question replaces exactly its table in the file as a draft
students do not see, and the preview is answerable with a student's feedback, recording
nothing. Only the course's instructors get in; forged forms get a 400 or field errors."""

import tomllib
from pathlib import Path

import pytest
from django.urls import reverse

from courses.kinds import REGISTRY, get_kind
from courses.kinds.forms import form_data
from courses.models import AnswerPreview, Attempt, Course
from studio import drafts
from studio.questionforms import Place, file_text

CONTENT = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"
QUESTIONS = "01-first/questions.toml"


def _builtin_questions() -> list[dict]:
    questions = []
    for path in sorted(CONTENT.glob("*/questions.toml")):
        questions += tomllib.loads(path.read_text())["questions"]
    return questions


def _bound(table: dict):
    form_class = get_kind(table["kind"]).authoring_form()
    return form_class(form_data(form_class, form_class.initial_from_spec(table)), kind=table["kind"])


def test_every_kind_has_a_form():
    assert {name for name, kind in REGISTRY.items() if kind.authoring_form() is None} == set()


@pytest.mark.parametrize("table", _builtin_questions(), ids=lambda table: table["slug"])
def test_every_builtin_question_goes_through_its_form_unchanged(table):
    form = _bound(table)
    assert form.is_valid(), (form.errors, [fs.errors for fs in form.formsets.values()])
    assert form.spec_from_form() == table


def test_writing_a_question_back_changes_only_its_own_lines():
    text = (CONTENT / "05-attention-score" / "questions.toml").read_text()
    entries = tomllib.loads(text)["questions"]
    changed = dict(entries[2], prompt="Yeni soru metni $x^2$?")
    new = file_text(text, Place("05-attention-score", "x", 2, entries[2]), changed)
    assert tomllib.loads(new)["questions"] == entries[:2] + [changed] + entries[3:]
    old_lines, new_lines = text.splitlines(), new.splitlines()
    starts = [i for i, line in enumerate(old_lines) if line == "[[questions]]"]
    new_starts = [i for i, line in enumerate(new_lines) if line == "[[questions]]"]
    # Everything before the question and from the next question on is the same text.
    assert new_lines[: new_starts[2]] == old_lines[: starts[2]]
    assert new_lines[new_starts[3] :] == old_lines[starts[3] :]


# -- the pages --------------------------------------------------------------------------------


@pytest.fixture
def teacher(client, mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    client.force_login(user)
    return user


def _edit_url(slug="first-choice"):
    return reverse("studio:question_edit", args=["mini", "01-first", slug])


def _new_url(kind):
    return reverse("studio:question_new", args=["mini", "01-first"]) + f"?tur={kind}"


def _post_of(client, url) -> dict:
    """What the browser would post from the form on ``url``, as a dict of field → value."""
    form = client.get(url).context["form"]
    return {key: form.data.getlist(key)[-1] for key in form.data}


def _choice_post(**changes) -> dict:
    data = {
        "q-slug": "yeni-secim",
        "q-prompt": "Hangisi doğru?",
        "options-TOTAL_FORMS": "3",
        "options-INITIAL_FORMS": "0",
        "options-0-text": "Doğru olan",
        "options-0-correct": "on",
        "options-1-text": "Yanlış olan",
        "options-1-explanation": "Bu yanlış.",
        "options-1-hint": "Tekrar okuyun.",
        "options-1-misconception": "yanlis-fikir",
        "q-shuffle": "on",
        "action": "save",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


@pytest.mark.django_db
def test_only_the_course_instructors_and_staff_get_in(client, mini_course, make_user, alice):
    urls = [
        ("get", reverse("studio:questions", args=["mini", "01-first"])),
        ("get", _edit_url()),
        ("get", _new_url("numeric")),
        ("post", _new_url("single_choice")),
        ("post", reverse("studio:question_answer", args=["mini", "abc"])),
    ]
    for method, url in urls:
        assert getattr(client, method)(url).status_code == 302, url  # to the login page
    other_teacher = make_user("baska-hoca")  # teaches another course, not this one
    Course.objects.create(slug="baska", title="Başka kurs").instructors.add(other_teacher)
    for user in (alice, other_teacher):
        client.force_login(user)
        for method, url in urls:
            assert getattr(client, method)(url, _choice_post()).status_code == 404, url
    assert not mini_course.draft_files.exists()
    client.force_login(make_user("personel", is_staff=True))  # staff for the admin only
    assert client.get(_edit_url()).status_code == 404
    client.force_login(make_user("yonetici", is_staff=True, is_superuser=True))
    assert client.get(_edit_url()).status_code == 200


@pytest.mark.django_db
def test_the_outline_links_each_question_to_its_form_and_offers_a_new_one(client, mini_course, teacher):
    page = client.get(reverse("studio:outline", args=["mini"])).text
    assert f'href="{_edit_url()}"' in page and "Formla düzenle" in page
    assert reverse("studio:question_new", args=["mini", "01-first"]) in page and "Yeni soru" in page


@pytest.mark.django_db
def test_the_form_shows_the_question_and_its_preview(client, mini_course, teacher):
    page = client.get(_edit_url())
    assert page.status_code == 200
    text = page.text
    assert 'value="first-choice"' in text and "Query ve Key" in text
    assert "Önizleme: öğrencilerin gördüğü" in text
    assert "Skor hangi iki parçadan hesaplanır?" in text and "Cevabımı kontrol et" in text


@pytest.mark.django_db
def test_no_correct_option_is_refused_at_the_options_and_nothing_is_saved(client, mini_course, teacher):
    response = client.post(_new_url("single_choice"), _choice_post(**{"options-0-correct": None}))
    assert response.status_code == 400
    group = response.text[response.text.index('id="grup-options"') :]
    group = group[: group.index("</fieldset>\n</fieldset>") if "</fieldset>\n</fieldset>" in group else 4000]
    assert "exactly one correct option, found 0" in group
    assert "Hiçbir şey kaydedilmedi" in response.text
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_bad_math_is_refused_at_the_prompt_with_the_formula(client, mini_course, teacher):
    response = client.post(
        _new_url("single_choice"), _choice_post(**{"q-prompt": "Skor $\\farc{a}{b}$ nedir?"})
    )
    assert response.status_code == 400
    form = response.context["form"]
    assert any("farc" in error for error in form.errors["prompt"])
    assert "farc" in response.text
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_a_slug_another_item_has_is_refused_at_the_slug(client, mini_course, teacher):
    response = client.post(_new_url("single_choice"), _choice_post(**{"q-slug": "first-choice"}))
    assert response.status_code == 400
    assert any("duplicate item slug" in error for error in response.context["form"].errors["slug"])
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_saving_replaces_only_that_question_as_a_draft_students_do_not_see(client, mini_course, teacher):
    before = drafts.read_text(mini_course, QUESTIONS)
    data = _post_of(client, _edit_url())
    data.update({"q-prompt": "Skor hangi **iki** parçadan hesaplanır?", "action": "save"})
    response = client.post(_edit_url(), data)
    assert response.status_code == 302 and "kaydedildi=1" in response.url
    draft = mini_course.draft_files.get(path=QUESTIONS)
    assert draft.updated_by == teacher
    assert tomllib.loads(draft.text)["questions"][0]["prompt"] == "Skor hangi **iki** parçadan hesaplanır?"
    assert tomllib.loads(draft.text)["questions"][1:] == tomllib.loads(before)["questions"][1:]
    assert "**iki**" not in mini_course.questions.get(slug="first-choice").prompt_html
    page = client.get(response.url)
    assert "Taslak kaydedildi" in page.text and "<strong>iki</strong>" in page.text


@pytest.mark.django_db
def test_a_new_numeric_question_is_appended_to_the_lesson_file(client, mini_course, teacher):
    before = drafts.read_text(mini_course, QUESTIONS)
    data = {
        "q-slug": "karekok",
        "q-prompt": "$d_k = 64$ ise $1/\\sqrt{d_k}$ kaçtır?",
        "q-answer": "0,125",
        "q-tolerance": "0.001",
        "wrong_values-TOTAL_FORMS": "2",
        "wrong_values-INITIAL_FORMS": "0",
        "wrong_values-0-value": "8",
        "wrong_values-0-misconception": "ters-alinmadi",
        "wrong_values-0-hint": "Karekökün tersini alın.",
        "action": "save",
    }
    response = client.post(_new_url("numeric"), data)
    assert response.status_code == 302
    assert response.url.startswith(_edit_url("karekok"))
    text = mini_course.draft_files.get(path=QUESTIONS).text
    assert text.startswith(before.rstrip("\n") + "\n\n[[questions]]\n")
    added = tomllib.loads(text)["questions"][-1]
    assert added == {
        "slug": "karekok",
        "kind": "numeric",
        "prompt": "$d_k = 64$ ise $1/\\sqrt{d_k}$ kaçtır?",
        "answer": 0.125,
        "tolerance": 0.001,
        "wrong_values": [{"value": 8, "misconception": "ters-alinmadi", "hint": "Karekökün tersini alın."}],
    }


@pytest.mark.django_db
def test_the_preview_answers_with_a_students_feedback_and_records_nothing(client, mini_course, teacher):
    data = _choice_post(action="preview")
    response = client.post(_new_url("single_choice"), data)
    assert response.status_code == 302 and "onizleme=" in response.url
    assert not mini_course.draft_files.exists()  # a preview saves nothing
    page = client.get(response.url)
    assert "Hangisi doğru?" in page.text
    preview = page.context["preview"]
    answer_url = preview["ctx"]["answer_url"]
    wrong = next(o["id"] for o in preview["question"].spec["options"] if not o["correct"])
    answered = client.post(answer_url, {"option": wrong, "preview": "1"})
    assert answered.status_code == 302
    page = client.get(answered.url)
    assert "Henüz değil" in page.text and "Bu yanlış." in page.text and "Tekrar okuyun." in page.text
    # The form keeps what was typed (unsaved) beside the preview.
    assert 'value="yeni-secim"' in page.text
    right = next(o["id"] for o in preview["question"].spec["options"] if o["correct"])
    page = client.get(client.post(answer_url, {"option": right, "preview": "1"}).url)
    assert "Doğru!" in page.text
    assert not Attempt.objects.exists() and not AnswerPreview.objects.exists()
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_add_a_row_works_without_javascript(client, mini_course, teacher):
    response = client.post(_new_url("single_choice"), _choice_post(action="add-options"))
    assert response.status_code == 200
    assert response.context["form"].formsets["options"].total_form_count() == 4
    assert 'name="options-3-text"' in response.text
    assert "Bu alan zorunludur" not in response.text
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_forged_forms_get_a_400_or_field_errors(client, mini_course, teacher):
    assert (
        client.get(reverse("studio:question_new", args=["mini", "01-first"]) + "?tur=nosuch").status_code
        == 400
    )
    assert (
        client.get(reverse("studio:question_new", args=["mini", "nosuch"]) + "?tur=numeric").status_code
        == 404
    )
    assert client.post(_new_url("single_choice"), _choice_post(action="add-nosuch")).status_code == 400
    assert client.post(_new_url("single_choice"), _choice_post(action="delete-all")).status_code == 400
    forged = client.post(
        _new_url("single_choice"), _choice_post(**{"options-TOTAL_FORMS": "99999", "action": "add-options"})
    )
    assert forged.status_code == 400
    forged = client.post(_new_url("single_choice"), _choice_post(**{"options-TOTAL_FORMS": "99999"}))
    assert forged.status_code == 400 and forged.context["form"].formsets["options"].non_form_errors()
    forged = client.post(_new_url("single_choice"), _choice_post(**{"options-TOTAL_FORMS": None}))
    assert forged.status_code == 400
    huge = client.post(
        _new_url("numeric"),
        {"q-slug": "x", "q-prompt": "p", "q-answer": "9" * 5000, "q-tolerance": "1e400", "action": "save"},
    )
    assert huge.status_code == 400
    errors = huge.context["form"].errors
    assert "answer" in errors and "tolerance" in errors
    assert (
        client.post(reverse("studio:question_answer", args=["mini", "forged"]), {"option": "a"}).status_code
        == 404
    )
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_the_slug_of_a_question_stays(client, mini_course, teacher):
    data = _post_of(client, _edit_url())
    data.update({"q-slug": "baska-ad", "action": "save"})
    response = client.post(_edit_url(), data)
    assert response.status_code == 400
    assert "kısa adı değişmez" in " ".join(response.context["form"].errors["slug"])
    assert "readonly" in response.text
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_a_broken_questions_file_is_sent_to_its_editor_not_overwritten(client, mini_course, teacher):
    drafts.save_draft(mini_course, QUESTIONS, "[[questions]\nslug = 1\n", teacher)
    response = client.get(_new_url("numeric"))
    assert response.status_code == 400
    assert "01-first/questions.toml" in response.text and "1. satırında" in response.text
    assert mini_course.draft_files.get(path=QUESTIONS).text == "[[questions]\nslug = 1\n"


@pytest.mark.django_db
def test_a_question_in_its_own_file_is_edited_in_that_file(client, mini_course, teacher):
    path = "01-first/questions/tek-dosya.toml"
    table = {"slug": "tek-dosya", "kind": "numeric", "prompt": "Kaç?", "answer": 2, "tolerance": 0}
    import tomlkit

    from studio.questionforms import _toml_table

    drafts.save_draft(mini_course, path, tomlkit.dumps(_toml_table(table)), teacher)
    data = _post_of(client, _edit_url("tek-dosya"))
    data.update({"q-answer": "3", "action": "save"})
    response = client.post(_edit_url("tek-dosya"), data)
    assert response.status_code == 302, (
        response.context["form"].errors,
        response.context["form"].group_errors,
    )
    assert tomllib.loads(mini_course.draft_files.get(path=path).text) == {**table, "answer": 3}
    assert "tek-dosya" not in mini_course.draft_files.get(path=path).text.split("slug")[0]


def _refused(client, kind: str, data: dict) -> dict:
    """The errors of a refused new question of ``kind``: {field or group: text}, rows by 'group-i-field'."""
    groups = get_kind(kind).authoring_form().groups
    empty = {key: "0" for group in groups for key in (f"{group}-TOTAL_FORMS", f"{group}-INITIAL_FORMS")}
    post = {**empty, "q-slug": "yeni", "q-prompt": "Soru?", "action": "save", **data}
    response = client.post(_new_url(kind), post)
    assert response.status_code == 400
    form = response.context["form"]
    errors = {name: " ".join(messages) for name, messages in form.errors.items()}
    errors.update({name: " ".join(messages) for name, messages in form.group_errors.items()})
    for group, formset in form.formsets.items():
        for index, row in enumerate(formset.forms):
            errors.update({f"{group}-{index}-{name}": " ".join(m) for name, m in row.errors.items()})
    return errors


def _rows(group: str, rows: list[dict]) -> dict:
    data = {f"{group}-TOTAL_FORMS": str(len(rows)), f"{group}-INITIAL_FORMS": "0"}
    for index, row in enumerate(rows):
        data.update({f"{group}-{index}-{name}": value for name, value in row.items()})
    return data


@pytest.mark.django_db
def test_each_kinds_problems_show_at_their_field(client, mini_course, teacher):
    errors = _refused(
        client,
        "matching",
        _rows("pairs", [{"left": "Query", "right": "Arar"}, {"left": "Key", "right": "$\\farc{1}{2}$"}]),
    )
    assert "farc" in errors.get("pairs-1-right", ""), errors
    errors = _refused(
        client,
        "matrix",
        {"q-answer": "[[1, 2], [3, 4]]", "q-tolerance": "0.1", **_rows("wrong", [{"matrix": "[[1, 2, 3]]"}])},
    )
    assert "the wrong matrix is 1×3" in errors["wrong-0-matrix"]
    errors = _refused(
        client,
        "ordering",
        _rows(
            "steps",
            [{"id": "a", "text": "Bir", "after": "b"}, {"id": "b", "text": "İki", "after": "a"}],
        ),
    )
    assert "a → b → a" in errors["steps-1-after"]  # at the "after" of a step in the cycle
    errors = _refused(
        client,
        "fill_in",
        {
            "q-code": "y = ____",
            **_rows("blanks", [{"answer": "x", "mode": "exact"}]),
            **_rows("wrong", [{"blank": "1", "pattern": "z", "hint": "$\\nosuch$"}]),
        },
    )
    assert "nosuch" in errors["wrong-0-hint"]
    errors = _refused(client, "numeric", {"q-answer": "1", "q-tolerance": "-1"})
    assert "tolerance" in errors["tolerance"]
    assert not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_a_text_blank_is_graded_in_the_preview_and_a_code_blank_is_sent_to_the_lesson(
    client, mini_course, teacher
):
    text_blank = {
        "q-code": "kelime = ____",
        **_rows("blanks", [{"answer": "Query", "mode": "nocase", "accept": "sorgu"}]),
        **_rows("wrong", [{"blank": "1", "pattern": "Key", "hint": "Key sunar, Query arar."}]),
        **_rows("cases", []),
    }
    post = {"q-slug": "kelime", "q-prompt": "Hangi vektör arar?", "action": "preview", **text_blank}
    page = client.get(client.post(_new_url("fill_in"), post).url)
    answer_url = page.context["preview"]["ctx"]["answer_url"]
    page = client.get(client.post(answer_url, {"blank-0": "key", "preview": "1"}).url)
    assert "Key sunar, Query arar." in page.text
    page = client.get(client.post(answer_url, {"blank-0": "SORGU", "preview": "1"}).url)
    assert "Doğru!" in page.text

    code_blank = {
        "q-code": "y = ____",
        "q-check": "y",
        **_rows("blanks", [{"answer": "x * 2", "mode": "code"}]),
        **_rows("wrong", []),
        **_rows("cases", [{"name": "bir", "inputs": "x = 3"}]),
    }
    post = {"q-slug": "kod-bosluk", "q-prompt": "İki katı?", "action": "preview", **code_blank}
    page = client.get(client.post(_new_url("fill_in"), post).url)
    assert page.context["preview"]["runs_code"]
    answered = client.post(page.context["preview"]["ctx"]["answer_url"], {"blank-0": "x + x", "preview": "1"})
    assert "sanal alanda çalışır" in client.get(answered.url).text
    assert not AnswerPreview.objects.exists() and not mini_course.draft_files.exists()


@pytest.mark.django_db
def test_a_preview_shows_only_on_its_own_questions_page(client, mini_course, teacher):
    response = client.post(_new_url("single_choice"), _choice_post(action="preview"))
    token = response.url.split("onizleme=")[1].split("#")[0]
    page = client.get(_edit_url() + f"?onizleme={token}")
    assert 'value="first-choice"' in page.text and 'value="yeni-secim"' not in page.text
