"""`manage.py variants SLUG [--json]`: the variants of a question or an exercise.

Prints ``{"item": slug, "variants": [{"index", "seed", "params"}]}``: a question's parameters
(its current variants), an exercise's seeds only. Never hidden inputs or expected outputs.
"""

import json

from django.core.management.base import BaseCommand

from courses.commandline import find_one
from courses.models import Exercise, Question, QuestionVariant
from courses.variants import variant_seed
from grader.core import SpecError, parse_spec


class Command(BaseCommand):
    help = "List the variants of a question (index, seed, parameters) or of an exercise (index, seed)."

    def add_arguments(self, parser):
        parser.add_argument(
            "slug", help="question or exercise slug (course/slug when several courses share it)"
        )
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print exactly one JSON object"
        )

    def handle(self, *args, slug: str, as_json: bool = False, **options):
        item = find_one([Question.objects, Exercise.objects], slug, "question or exercise")
        variants = _exercise_variants(item) if item.is_exercise else _question_variants(item)
        if as_json:
            self.stdout.write(json.dumps({"item": item.slug, "variants": variants}, ensure_ascii=False))
            return
        kind = "exercise" if item.is_exercise else "question"
        self.stdout.write(f"{item.course.slug}/{item.slug} ({kind}): {len(variants)} variant(s)")
        for variant in variants:
            params = json.dumps(variant["params"], ensure_ascii=False) if variant["params"] else ""
            seed = "" if variant["seed"] is None else f"seed {variant['seed']}"
            self.stdout.write(f"  {variant['index']}: {seed} {params}".rstrip())


def _question_variants(question: Question) -> list[dict]:
    if question.variant_count <= 1:
        return [{"index": 0, "seed": None, "params": {}}]
    rows = QuestionVariant.objects.filter(question=question, current=True).order_by("index")
    return [{"index": row.index, "seed": row.seed, "params": row.params} for row in rows]


def _exercise_variants(exercise: Exercise) -> list[dict]:
    """An exercise's variants differ only in the hidden cases cases.py draws from each seed:
    the seed is all that is shown (never the cases themselves)."""
    try:
        base = parse_spec(exercise.spec).seed
    except SpecError:
        base = 0
    if exercise.variant_count <= 1:
        return [{"index": 0, "seed": base, "params": {}}]
    return [
        {"index": index, "seed": variant_seed(base, index), "params": {}}
        for index in range(exercise.variant_count)
    ]
