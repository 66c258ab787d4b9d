"""The lesson page's markup, cached per (lesson, language, content version); the student's own
state is filled in per request.

Two kinds of entries, in the "pages" cache (files under the var folder, shared by every web
worker of the machine):

- the lesson's **frame**: breadcrumbs, outline, body and pager, rendered once per lesson,
  language and content version, with slots where the items, each item's line in the outline
  and the "mark as done" footer go; it also keeps the lesson's items (questions and exercises)
  so that a page served from it reads no content from the database;
- each **item's fragment**, keyed by everything it shows: the content version, the language,
  the order its options are shown in, and the student's own answers to it (their ids and
  states). A student who has not answered shares the fragment with every student who sees the
  options in the same order; one who has answered re-renders it once per new answer.

The content version is read with the lesson itself: its ``updated_at`` and the course's
``imported_at`` (every import sets it), plus a fingerprint of the templates, translations and
code that render the page. Saving a course, lesson, question or exercise any other way (the
admin) touches ``updated_at`` of the lessons that show it (see ``touch_lessons``), so a page is
never served from markup older than its content. CSRF tokens are per request: cached markup
holds ``CSRF_SLOT`` where a form's token goes.
"""

import copy
import dataclasses
import functools
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.filebased import FileBasedCache
from django.db.models import Model
from django.db.models.signals import post_delete, post_save
from django.template.loader import render_to_string
from django.utils import timezone

from .kinds import get_kind
from .models import Course, Exercise, Lesson, Question

CACHE_ALIAS = "pages"
# What a cached form holds instead of its CSRF token (an author could never write it).
CSRF_SLOT = "dikkat-csrf-slot-5c1e0f7a"
# A frame's slots: <!--slot:outline:3-->, <!--slot:item:3--> (the item's index), <!--slot:footer-->.
# Author text cannot hold an HTML comment (Markdown's raw HTML is off and nh3 drops comments).
_SLOT = re.compile(r"<!--slot:(outline|item|footer)(?::(\d+))?-->")
FRAME_TIMEOUT = 7 * 24 * 3600
ITEM_TIMEOUT = 24 * 3600
QUESTION_STATUSES = ("new", "tried", "revealed", "solved")
EXERCISE_STATUSES = ("new", "tried", "solved")


@functools.cache
def fingerprint() -> str:
    """Of what renders the page besides its content: templates, translations and the Python
    that builds contexts (a deploy that changes any of them never serves older markup)."""
    base = Path(settings.BASE_DIR)
    digest = hashlib.sha256()
    globs = (
        "templates/**/*.html",
        "*/locale/**/*.mo",  # each app's translations (grader.core's feedback messages too)
        "locale/**/*.mo",
        "courses/**/*.py",
        "grader/**/*.py",  # the exercise box, feedback tags and messages
        "assessments/**/*.py",
    )
    for pattern in globs:
        for path in sorted(base.glob(pattern)):
            digest.update(str(path.relative_to(base)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class PageCache(FileBasedCache):
    """Django's file-based cache, culled at most once a minute: Django's lists every file of
    the folder on every write to see whether it holds more than MAX_ENTRIES."""

    cull_interval = 60.0
    _culled_at = 0.0

    def _cull(self) -> None:
        now = time.monotonic()
        if now - PageCache._culled_at >= self.cull_interval:
            PageCache._culled_at = now
            super()._cull()  # type: ignore[misc]  # the stubs leave out FileBasedCache's helpers

    def clear(self) -> None:
        super().clear()
        _local.clear()


def cache():
    return caches[CACHE_ALIAS]


# What this process read from the page cache lately, by key: a key names its entry's content
# (the content version, the language, the student's state), so an entry never goes stale and
# each process may keep one in memory instead of reading and unpickling its file again.
LOCAL_ENTRIES = 2048
_local: dict[str, Any] = {}


def _remember(key: str, value: Any) -> None:
    if len(_local) >= LOCAL_ENTRIES:
        _local.clear()  # simpler than an LRU; a few file reads refill it
    _local[key] = value


def lesson_version(lesson: Lesson) -> str:
    imported = lesson.course.imported_at
    return f"{lesson.updated_at.timestamp() if lesson.updated_at else 0}-{imported.timestamp() if imported else 0}-{fingerprint()}"


def digest(*parts: Any) -> str:
    """A short stable hash of JSON-able parts (the same in every process)."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


@dataclass
class Frame:
    """A lesson's page without the student: static parts and slots (see the module docstring)."""

    parts: list[str | tuple[str, int]]
    items: list  # the lesson's questions and exercises, in order (Lesson.items())
    outline: list[dict[str, str]]  # per item: its outline line for each status
    footer: dict[bool, str] = field(default_factory=dict)  # done? -> the footer (CSRF_SLOT in its form)

    def assemble(self, items_html: list[str], statuses: list[str], done: bool, *, footer: bool) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            elif part[0] == "item":
                out.append(items_html[part[1]])
            elif part[0] == "outline":
                out.append(self.outline[part[1]][statuses[part[1]]])
            elif footer:
                out.append(self.footer[done])
        return "".join(out)


def lesson_frame(lesson: Lesson, language: str) -> Frame:
    """The lesson's frame. Its items are this request's own copies: a page asks each question
    as its student's variant (Question.ask changes the instance)."""
    key = f"frame:{lesson.pk}:{language}:{lesson_version(lesson)}"
    frame = _local.get(key)
    if frame is None:
        frame = cache().get(key)
        if frame is None:
            frame = _build_frame(lesson)
            cache().set(key, frame, FRAME_TIMEOUT)
        _remember(key, frame)
    return dataclasses.replace(frame, items=[copy.copy(item) for item in frame.items])


def _build_frame(lesson: Lesson) -> Frame:
    items = lesson.items()
    previous, following = lesson.neighbours()
    html = render_to_string(
        "courses/lesson_frame.html", {"course": lesson.course, "lesson": lesson, "items": items}
    )
    parts: list[str | tuple[str, int]] = []
    position = 0
    for match in _SLOT.finditer(html):
        parts.append(html[position : match.start()])
        parts.append((match.group(1), int(match.group(2) or 0)))
        position = match.end()
    parts.append(html[position:])
    outline = [
        {
            status: render_to_string("courses/outline_item.html", {"item": item, "status": status}).strip()
            for status in (EXERCISE_STATUSES if item.is_exercise else QUESTION_STATUSES)
        }
        for item in items
    ]
    footer: dict[bool, str] = {
        done: render_to_string(
            "courses/lesson_footer.html",
            {
                "course": lesson.course,
                "lesson": lesson,
                "done": done,
                "previous": previous,
                "next": following,
                "csrf_token": CSRF_SLOT,
            },
        )
        for done in (False, True)
    }
    # The cached items link to a copy of their lesson without its body (already in the parts).
    shell = copy.copy(lesson)
    shell.body_html = shell.body_source = ""
    for item in items:
        item.lesson = shell
    return Frame(parts, items, outline, footer)


def item_key(item: Model, version: str, language: str, state: Any) -> str:
    kind = "exercise" if getattr(item, "is_exercise", False) else "question"
    return f"item:{kind}:{item.pk}:{language}:{version}:{digest(state)}"


def kind_context_digest(question: Question, version: str, seed: tuple) -> str:
    """The digest of what the question's kind shows this student (options in their own
    order): part of its fragment's key. Remembered per process: a kind's context can take
    a millisecond to build (matching turns every answer's formula into text)."""
    asked = question.asked_variant
    return _kind_context_digest(question, asked.digest if asked else "", version, seed)


@functools.lru_cache(maxsize=16384)
def _kind_context_digest(question: Question, variant: str, version: str, seed: tuple) -> str:
    # Keyed by the question's pk (a model's hash) and the variant it asks.
    kind = get_kind(question.kind)
    return digest(kind.context(question.spec, seed) if kind else None)


def get_items(keys: list[str]) -> dict[str, str]:
    found = {}
    for key in keys:
        fragment = _local.get(key)  # get: another thread may empty _local meanwhile
        if fragment is not None:
            found[key] = fragment
    missing = [key for key in keys if key not in found]
    if missing:
        for key, fragment in cache().get_many(missing).items():
            _remember(key, fragment)
            found[key] = fragment
    return found


def set_items(fragments: dict[str, str]) -> None:
    if fragments:
        cache().set_many(fragments, ITEM_TIMEOUT)
        for key, fragment in fragments.items():
            _remember(key, fragment)


def touch_lessons(sender, instance, **kwargs) -> None:
    """A course, lesson, question or exercise was saved or deleted outside an import (the
    admin): the lessons that show it get a new ``updated_at``, so their pages are rendered
    again. A lesson's title and order show on its neighbours' pages: every lesson of the
    course is touched. (An import also sets the course's ``imported_at``.)"""
    if kwargs.get("raw"):
        return  # loaddata
    course_id = instance.pk if isinstance(instance, Course) else instance.course_id
    lessons = Lesson.objects.filter(course_id=course_id)
    if isinstance(instance, Question | Exercise):
        lessons = lessons.filter(pk=instance.lesson_id)
    lessons.update(updated_at=timezone.now())


def connect_signals() -> None:
    for model in (Course, Lesson, Question, Exercise):
        post_save.connect(touch_lessons, sender=model, dispatch_uid=f"pagecache-save-{model.__name__}")
        post_delete.connect(touch_lessons, sender=model, dispatch_uid=f"pagecache-delete-{model.__name__}")
