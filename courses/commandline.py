"""What the item commands (``answer``, ``grade``, ``variants``) share: finding one item by
``slug`` or ``course/slug``, and the variant a command asked for (``--variant N``, a student's
own with ``--student NAME``, or none). Each raises CommandError with the message the command
prints, so the three commands say the same thing for the same mistake."""

from collections.abc import Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def find_one(managers: Sequence, slug: str, what: str, hint: str = "") -> Any:
    """The one active item for ``slug`` (``course/slug`` when several courses share it) among
    the models of ``managers``; ``what`` names the items in messages ("exercise"), ``hint``
    says where to look up the slugs."""
    found = [item for manager in managers for item in manager.matching(slug)]
    if not found:
        raise CommandError(f"no active {what} with slug {slug!r}" + (f"; {hint}" if hint else ""))
    if len(found) > 1:
        raise CommandError(
            f"several items have the slug {slug!r}; use course/slug: "
            + ", ".join(f"{item.course.slug}/{item.slug}" for item in found)
        )
    return found[0]


def variant_asked(item, variant: int | None, student: str | None) -> int | None:
    """The variant index a command asked for: ``student``'s own, else ``variant`` checked
    against the item's count, else None (the item's own: variant 0)."""
    if student is not None:
        user = get_user_model().objects.filter(username=student).first()
        if user is None:
            raise CommandError(f"unknown user {student!r}")
        return item.variant_index(user)
    if variant is None:
        return None
    count = max(1, item.variant_count)
    if not 0 <= variant < count:
        raise CommandError(
            f"{item.slug} has {count} variant(s): --variant must be from 0 to {count - 1}, not {variant}"
        )
    return variant
