import json

from django.core.management.base import BaseCommand, CommandError

from courses.commandline import find_one, variant_asked
from courses.kinds import AnswerError, GraderFailed, NotGradable, get_kind
from courses.models import Question, QuestionVariant
from courses.selftest import grade_answer
from courses.templatetags_text import html_to_text


class Command(BaseCommand):
    help = (
        "Grade an answer to a question exactly as the web does (nothing is stored) and print "
        '{"question", "kind", "score", "correct", "feedback"}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="question slug (course/slug when several courses share it)")
        parser.add_argument(
            "--json", dest="answer", required=True, help='the answer as JSON, e.g. \'{"option": "a"}\''
        )
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--variant", type=int, help="grade on this variant of the question (default 0)")
        which.add_argument("--student", metavar="USERNAME", help="grade on this student's own variant")

    def handle(self, *args, slug: str, answer: str, variant=None, student=None, **options):
        question = find_one([Question.objects], slug, "question")
        _ask(question, variant, student)
        try:
            raw = json.loads(answer)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--json is not valid JSON: {exc}") from None
        try:
            cleaned, grade = grade_answer(question, raw)
        except (AnswerError, NotGradable) as exc:
            raise CommandError(f"answer not gradable: {exc}") from None
        except GraderFailed as exc:
            raise CommandError(f"the grader failed (not the answer's fault): {exc}") from None
        kind = get_kind(question.kind)
        assert kind is not None  # the import refuses unknown kinds
        feedback = [
            " ".join(
                filter(
                    None,
                    [
                        ("✓ " if item["correct"] else "✗ ") + html_to_text(item["label_html"]),
                        html_to_text(item.get("html", "")),
                        html_to_text(item.get("hint_html", "")),
                    ],
                )
            )
            for item in kind.feedback_items(question.spec, cleaned, grade.feedback)
        ]
        self.stdout.write(
            json.dumps(
                {
                    "question": question.slug,
                    "kind": question.kind,
                    "score": grade.score,
                    "correct": grade.correct,
                    "feedback": feedback,
                },
                ensure_ascii=False,
            )
        )


def _ask(question: Question, variant: int | None, student: str | None) -> None:
    """Set ``question`` to ask the variant asked for: --variant N, the student's own, or 0 (the
    question's own spec, as before it had variants)."""
    variant = variant_asked(question, variant, student)
    if variant is None:
        return
    if question.variant_count > 1:
        row = QuestionVariant.objects.filter(question=question, index=variant, current=True).first()
        if row is None:
            raise CommandError(f"{question.slug} has no variant {variant}: import the course again")
        question.ask(row)
