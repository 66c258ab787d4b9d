from django import template

from courses.kinds import REGISTRY

register = template.Library()


@register.simple_tag
def question_kinds() -> list[tuple[str, str]]:
    """(name, label) of every kind that has an authoring form, for "New question", in the
    registry's order (single choice first)."""
    return [(name, str(kind.label)) for name, kind in REGISTRY.items() if kind.authoring_form()]
