"""What each catalogued misconception variant does beyond failing cases: the properties
it breaks and the weight-probe diagnoses it gets (grader.core.properties.behaviour).

``courses.exercises`` grades every variant when it checks a course; it hands each result
to `record`, and validate_course prints the catalogue (text) or adds it under the key
``misconceptions`` (``--json``).
"""

from grader.core.properties import behaviour


def record(exercise, tag: str, result) -> None:
    """Keep what the variant ``tag`` of ``exercise`` breaks (from its GradeResult)."""
    found = getattr(exercise, "variant_behaviour", None)
    if found is None:
        found = exercise.variant_behaviour = {}
    found[tag] = behaviour(result.tests)


def report(source) -> list[dict]:
    """One entry per recorded variant: exercise, tag, properties_broken, diagnoses."""
    return [
        {"exercise": exercise.slug, "tag": tag, **found}
        for exercise in source.all_exercises()
        for tag, found in (getattr(exercise, "variant_behaviour", None) or {}).items()
    ]


def report_lines(source) -> list[str]:
    """The catalogue as text, one line per variant that breaks a property or gets a diagnosis."""
    lines = []
    for entry in report(source):
        if entry["properties_broken"] or entry["diagnoses"]:
            lines.append(
                f"{entry['exercise']}: {entry['tag']} breaks "
                f"{', '.join(entry['properties_broken']) or 'no property'}; "
                f"probe: {', '.join(entry['diagnoses']) or 'no diagnosis'}"
            )
    return lines
