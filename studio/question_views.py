"""Questions edited through their kind's form, beside an answerable preview.

- ``lesson_questions``: a lesson's questions (from the working copy) with a link to each
  one's form, and "New question" with a kind chooser.
- ``question_edit`` / ``question_new``: the kind's form (studio.questionforms). "Preview"
  checks the question as an import would and shows it as students see it; "Save draft" does
  the same and, only when nothing is refused, writes it into its file as a draft. A group's
  "Add a row" button works without JavaScript.
- ``question_answer``: an answer to the preview, graded by the kind exactly as a student's
  and shown with the student's feedback; nothing is stored but the session's note of it.

Only the course's instructors (and staff) get in; everyone else gets a 404, as elsewhere
in the authoring area. A forged form (an unknown kind, forged row counts, huge numbers) gets
a 400 or field errors, never a server error.
"""

import secrets

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from courses.hints import HintLadder
from courses.kinds import AnswerError, NotGradable, get_kind
from courses.kinds.forms import MAX_ROWS, QuestionForm, form_data
from courses.lessonpage import preview_note
from courses.models import AnswerPreview, Course
from courses.selftest import QuestionState, item_context

from .drafts import DraftRefused, may_author
from .questionforms import (
    Checked,
    FileUnreadable,
    Place,
    QuestionNotFound,
    check_question,
    find_question,
    kind_form,
    lesson_folders,
    lesson_question_list,
    new_place,
    preview_question,
    restored_question,
    save_question,
    stored_question,
)

_PREVIEWS = "studio-question-previews"  # the session's previews: {token: entry}
_KEEP = 8  # previews kept per session


def _get_course(request: HttpRequest, slug: str) -> Course:
    course = get_object_or_404(Course, slug=slug)
    if not may_author(request.user, course):
        raise Http404
    return course


def _check_lesson(course: Course, lesson: str) -> None:
    if lesson not in lesson_folders(course):
        raise Http404


def _bad_request(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "400.html", {"message": message}, status=400)


@login_required
def lesson_questions(request: HttpRequest, course_slug: str, lesson: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    _check_lesson(course, lesson)
    context = {
        "course": course,
        "here": _("Questions"),
        "lesson": lesson,
        "questions": lesson_question_list(course, lesson),
    }
    return render(request, "studio/question_list.html", context)


@login_required
def question_new(request: HttpRequest, course_slug: str, lesson: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    _check_lesson(course, lesson)
    kind_name = request.GET.get("tur", "")
    form_class = kind_form(kind_name)
    if form_class is None:
        return _bad_request(request, _("Choose one of the question kinds."))
    try:
        place = new_place(course, lesson)
    except FileUnreadable as broken:
        return _bad_request(request, str(broken))
    return _question_page(request, course, place, kind_name, form_class, new=True)


@login_required
def question_edit(request: HttpRequest, course_slug: str, lesson: str, slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    _check_lesson(course, lesson)
    try:
        place = find_question(course, lesson, slug)
    except QuestionNotFound:
        raise Http404 from None
    kind_name = place.table.get("kind", "")
    form_class = kind_form(kind_name)
    if form_class is None:  # a kind without a form: its file's editor
        return redirect("studio:edit", course.slug, place.path)
    return _question_page(request, course, place, kind_name, form_class, new=False)


def _question_page(
    request: HttpRequest, course: Course, place: Place, kind_name: str, form_class, *, new: bool
) -> HttpResponse:
    page_url = request.path + (f"?tur={kind_name}" if new else "")
    entry = _entry(request, course, request.GET.get("onizleme", ""))
    if entry is not None and entry["url"] != page_url:  # a preview of another question
        entry = None
    status = 200
    show_errors = True
    token = ""
    if request.method == "POST":
        action = request.POST.get("action", "")
        data: QueryDict = request.POST
        if action.startswith("add-"):
            more = _with_row(form_class, data, action.removeprefix("add-"))
            if more is None:
                return _bad_request(request, _("This form was changed outside the page."))
            data, show_errors = more, False
        form = form_class(data, kind=kind_name)
        if action in ("preview", "save"):
            try:
                checked = _check(form, course, place)
            except FileUnreadable as broken:
                return _bad_request(request, str(broken))
            if checked is None:
                status = 400
            else:
                if action == "save":
                    try:
                        save_question(course, place, checked.text, request.user)
                    except DraftRefused as refused:
                        return _bad_request(request, str(refused))
                    slug = form.cleaned_data["slug"]
                    page_url = reverse("studio:question_edit", args=[course.slug, place.lesson, slug])
                token = _remember(request, course, page_url, form, checked)
                joiner = "&" if "?" in page_url else "?"
                saved = "&kaydedildi=1" if action == "save" else ""
                return redirect(f"{page_url}{joiner}onizleme={token}{saved}#onizleme")
        elif not action.startswith("add-"):
            return _bad_request(request, _("This form was changed outside the page."))
    elif entry is not None:
        form = form_class(_query_dict(entry["post"]), kind=kind_name)
        token = request.GET["onizleme"]
    elif new:
        form = form_class(kind=kind_name)
    else:
        initial = form_data(form_class, form_class.initial_from_spec(place.table))
        form = form_class(_query_dict({key: [value] for key, value in initial.items()}), kind=kind_name)
        try:
            checked = _check(form, course, place)
        except FileUnreadable:
            checked = None
        if checked is not None:
            token = _remember(request, course, page_url, form, checked)
            entry = _entry(request, course, token)
    if not new:
        form.fields["slug"].widget.attrs["readonly"] = True
    kind = get_kind(kind_name)
    context = {
        "course": course,
        "here": _("Question"),
        "form": form,
        "kind_label": kind.label if kind else kind_name,
        "lesson": place.lesson,
        "path": place.path,
        "new": new,
        "show_errors": show_errors,
        "refused": status == 400,
        "saved": request.GET.get("kaydedildi") == "1" and request.method == "GET",
        "preview": _preview_context(request, course, entry, token)
        if entry and request.method == "GET"
        else None,
        "max_rows": MAX_ROWS,
    }
    return render(request, "studio/question_form.html", context, status=status)


def _with_row(form_class, post: QueryDict, group: str) -> QueryDict | None:
    """The posted form with one more empty row in ``group`` (None: no such group, or a
    forged row count)."""
    if group not in form_class.groups:
        return None
    key = f"{group}-TOTAL_FORMS"
    total = post.get(key, "")
    if not total.isdigit() or int(total) >= MAX_ROWS:
        return None
    data = post.copy()
    data[key] = str(int(total) + 1)
    return data


def _check(form: QuestionForm, course: Course, place: Place) -> Checked | None:
    """The import's checks of the form's question; None when the form or they found a problem
    (each is then on the form, at its field where it can be)."""
    if not form.is_valid():
        return None
    if place.table and form.cleaned_data["slug"] != place.table.get("slug"):
        form.add_error(
            "slug",
            _("The slug of a question stays as it is: students' answers are kept under it."),
        )
        return None
    table = form.spec_from_form()
    if not form.is_valid():  # spec_from_form may find a row that points nowhere
        return None
    checked = check_question(course, place, table)
    for keys, message in checked.problems:
        form.add_problem(keys, _("The import refuses this: %(problem)s") % {"problem": message})
    return None if checked.problems else checked


# -- the preview ----------------------------------------------------------------------------


def _remember(request: HttpRequest, course: Course, url: str, form: QuestionForm, checked: Checked) -> str:
    """Keep what the preview needs in the session; its token names it in the page's address."""
    token = secrets.token_urlsafe(9)
    previews = request.session.get(_PREVIEWS, {})
    previews = dict(list(previews.items())[-(_KEEP - 1) :])
    data = form.data if isinstance(form.data, QueryDict) else _query_dict({})
    post = {key: data.getlist(key) for key in data if key not in ("csrfmiddlewaretoken", "action")}
    previews[token] = {
        "course": course.pk,
        "url": url,
        "post": post,
        "lesson": checked.lesson_slug,
        "question": stored_question(checked.source) if checked.source else None,
        "answer": None,
        "error": "",
    }
    request.session[_PREVIEWS] = previews
    return token


def _entry(request: HttpRequest, course: Course, token: str) -> dict | None:
    entry = request.session.get(_PREVIEWS, {}).get(token) if token else None
    return entry if entry is not None and entry["course"] == course.pk else None


def _query_dict(post: dict) -> QueryDict:
    data = QueryDict(mutable=True)
    for key, values in post.items():
        data.setlist(key, values)
    return data


def _preview_context(request: HttpRequest, course: Course, entry: dict, token: str) -> dict:
    if entry.get("question") is None:
        return {"note": _("There is nothing to preview yet.")}
    source = restored_question(entry["question"])
    question = preview_question(course, entry["lesson"], source)
    kind = get_kind(question.kind)
    assert kind is not None  # checked before it was kept
    if question.generated:
        return {
            "note": _(
                "A question with a generator gets its variants when it is published (its params.py "
                "runs in the sandbox then): preview it in the student preview of the lesson."
            )
        }
    shown = None
    if entry.get("answer") is not None:
        grade = kind.grade(question.spec, entry["answer"])
        shown = AnswerPreview(
            user=request.user,  # type: ignore[misc]  # login_required: never anonymous
            question=question,
            answer=entry["answer"],
            score=grade.score,
            correct=grade.correct,
            feedback=grade.feedback,
            misconceptions=grade.misconceptions,
            status=AnswerPreview.Status.DONE,
        )
    state = QuestionState(question, [shown] if shown is not None else [])  # type: ignore[list-item]
    failed = 1 if shown is not None and not shown.correct else 0
    ctx = {
        **item_context(question, state, request.user),
        # What a student sees after this answer: with a wrong one, the first hint may be opened.
        "hints": HintLadder(question, opened=failed, failed=failed),
        "error": entry.get("error", ""),
        "preview": preview_note(shown),
        "draft": None,
        "recording": False,
        "preview_mode": True,
        "answer_url": reverse("studio:question_answer", args=[course.slug, token]),
    }
    runs_code = bool(kind.code_runs(question.spec))
    return {
        "question": question,
        "ctx": ctx,
        "runs_code": runs_code,
        "solution": kind.solution_items(question.spec),
    }


@login_required
@require_POST
def question_answer(request: HttpRequest, course_slug: str, token: str) -> HttpResponse:
    """An answer to the preview: graded as a student's would be, kept only in the session."""
    course = _get_course(request, course_slug)
    entry = _entry(request, course, token)
    if entry is None or entry.get("question") is None:
        raise Http404
    source = restored_question(entry["question"])
    kind = get_kind(source.kind)
    if kind is None or source.generator:
        raise Http404
    if kind.code_runs(source.spec):
        entry["error"] = _(
            "Code blanks run in the sandbox: try them in the student preview of the lesson once "
            "the question is published."
        )
    else:
        try:
            entry["answer"] = kind.clean_answer(source.spec, kind.answer_from_post(source.spec, request.POST))
            entry["error"] = ""
        except AnswerError as refused:
            return _bad_request(request, str(refused))
        except NotGradable as slip:
            entry["error"] = str(slip)
    request.session.modified = True
    joiner = "&" if "?" in entry["url"] else "?"
    return redirect(f"{entry['url']}{joiner}onizleme={token}#onizleme")
