"""Editing what students read of an exercise (its prompt, hints, starter) is not a new version
of its grading: the grading data, the students' variants and their submissions stand. Changing
what grading uses (the solution, the cases) is."""

import shutil
from pathlib import Path

from courses.importer import import_course
from courses.models import Exercise

FIXTURES = Path(__file__).parent / "fixtures"


def _hash(root: Path) -> str:
    import_course(root)
    return Exercise.objects.get(course__slug="lab", slug="attn").content_hash


def test_new_words_keep_the_grading_version_and_new_answers_make_a_new_one(db, tmp_path):
    root = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", root)
    folder = root / "01-lab" / "attn"
    first = _hash(root)

    toml = folder / "exercise.toml"
    text = toml.read_text(encoding="utf-8")
    assert 'title = "' in text
    toml.write_text(
        text.replace('title = "', 'hints = ["Önce skorları hesaplayın."]\ntitle = "Yeni başlık: ', 1),
        encoding="utf-8",
    )
    (folder / "starter.py").write_text("# Buradan başlayın\n", encoding="utf-8")
    assert _hash(root) == first
    assert Exercise.objects.get(slug="attn").title.startswith("Yeni başlık")

    solution = folder / "solution.py"
    solution.write_text(solution.read_text(encoding="utf-8") + "\n# the same answer, other bytes\n")
    assert _hash(root) != first
