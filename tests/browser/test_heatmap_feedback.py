"""A wrong submission's feedback shows the student's attention weights next to the expected
ones (two heatmaps and a difference view, server-rendered, with a data table) and the
diagnosis in plain words: forgotten scaling, softmax on the wrong axis, a leaky mask."""

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "courses" / "content" / "attention"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
LESSONS = {
    "olcekleme": ("06-scaled-dot-product", "attention-function"),
    "maske": ("07-visual-attention", "causal-mask"),
}


@pytest.fixture
def probe_course(transactional_db, tmp_path):
    """The course's own attention-function and causal-mask exercises in a small course."""
    from courses.exercises import check_exercises
    from courses.importer import import_course
    from courses.models import Course

    root = tmp_path / "yoklama"
    root.mkdir()
    (root / "course.toml").write_text('slug = "yoklama"\ntitle = "Ağırlık yoklaması"\n')
    for order, (slug, (lesson, exercise)) in enumerate(LESSONS.items(), start=1):
        folder = root / f"0{order}-{slug}"
        folder.mkdir()
        (folder / "lesson.md").write_text(
            f'+++\nslug = "{slug}"\ntitle = "{slug}"\norder = {order}\n+++\n\nMetin.\n'
        )
        shutil.copytree(COURSE / lesson / exercise, folder / exercise)
    import_course(root, prepare_exercises=lambda source: check_exercises(source, build=True))
    return Course.objects.get(slug="yoklama")


def variant(lesson: str, name: str) -> str:
    folder, exercise = LESSONS[lesson]
    return (COURSE / folder / exercise / "variants" / name).read_text()


def submit(page, write_code, lesson: str, slug: str, code: str):
    page.goto(f"{page.base_url}/kurs/yoklama/{lesson}/")
    exercise = page.locator(f"#ex-{slug}")
    write_code(exercise, code)
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    feedback = exercise.locator(".probe-feedback")
    expect(feedback).to_be_visible(timeout=30_000)
    return exercise, feedback


def serious_violations(page, selector: str) -> list[str]:
    """axe-core's serious and critical findings inside ``selector``."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text() + "\n;0")
    result = page.evaluate(
        "(selector) => axe.run(document.querySelector(selector), {resultTypes: ['violations']})", selector
    )
    return [f"{r['id']}: {r['help']}" for r in result["violations"] if r["impact"] in ("serious", "critical")]


def expect_three_heatmaps(feedback):
    maps = feedback.locator(".probe-map")
    expect(maps).to_have_count(3)
    expect(maps.nth(0).locator("figcaption")).to_have_text("Sizin ağırlıklarınız")
    expect(maps.nth(1).locator("figcaption")).to_have_text("Beklenen ağırlıklar")
    expect(maps.nth(2).locator("figcaption")).to_have_text("Fark (sizinki − beklenen)")
    for i in range(3):
        box = maps.nth(i).locator("svg").bounding_box()
        assert box and box["width"] > 100 and box["height"] > 60


def test_forgotten_scaling_shows_the_heatmaps_and_the_temperature(
    page, probe_course, grading_worker, logged_in, write_code
):
    logged_in(probe_course)
    _exercise, feedback = submit(
        page, write_code, "olcekleme", "attention-function", variant("olcekleme", "no-scaling.py")
    )
    expect(feedback.locator(".probe-title")).to_have_text("Attention ağırlıklarınız ne gösteriyor")
    expect(feedback.locator(".probe-diagnoses li").first).to_have_text(
        "Ağırlıklarınız olması gerekenden yaklaşık 2× daha sivri: √d_k = 2 (d_k = 4). "
        "Ölçeklemeyi unuttunuz mu? Skorları softmax'tan önce √d_k'ya bölün."
    )
    expect_three_heatmaps(feedback)
    # The difference view: the student's largest weight is 0.91 where 0.69 was expected.
    diff = feedback.locator(".probe-map-diff")
    expect(diff.locator("text.hm-num").nth(2)).to_have_text("+0.22")
    expect(diff.locator("rect.hm-more")).not_to_have_count(0)
    expect(diff.locator("rect.hm-less")).not_to_have_count(0)
    # The numbers as a table, readable without the pictures.
    feedback.get_by_text("Ağırlıklar tablo olarak").click()
    table = feedback.locator("table.probe-table")
    expect(table.locator("tbody tr").first).to_contain_text("0.91 / 0.69 (+0.22)")
    # Hidden cases: the diagnosis only (with √d_k of that case), never a matrix.
    expect(feedback.locator(".probe-diagnoses").nth(1)).to_contain_text("√d_k = 1.73 (d_k = 3)")
    expect(feedback.locator("svg")).to_have_count(3)
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        feedback.screenshot(path=str(ARTIFACTS / f"heatmap-feedback-no-scaling-tr-{width}.png"))
    page.emulate_media(color_scheme="dark")
    feedback.screenshot(path=str(ARTIFACTS / "heatmap-feedback-no-scaling-tr-dark.png"))


def test_softmax_on_the_wrong_axis_is_named(page, probe_course, grading_worker, logged_in, write_code):
    logged_in(probe_course)
    _exercise, feedback = submit(
        page, write_code, "olcekleme", "attention-function", variant("olcekleme", "softmax-wrong-axis.py")
    )
    expect(feedback.locator(".probe-diagnoses li").first).to_have_text(
        "Ağırlıklarınızın satırları değil sütunları 1'e toplanıyor: softmax Query ekseni boyunca "
        "alınmış. Her Query dikkatini Key'lere dağıtır; softmax'ı son eksen boyunca alın (axis=-1)."
    )
    expect_three_heatmaps(feedback)
    # The relations it breaks, with the concept behind each.
    broken = feedback.locator(".property-list li.fb-bad")
    expect(broken.first).to_contain_text("Her Key'e aynı vektör eklendi")
    expect(broken.first).to_contain_text("Bir satırın tamamı kaydırıldığında o satırın softmax'ı değişmez.")


def test_a_leaky_mask_shows_weight_on_masked_cells(page, probe_course, grading_worker, logged_in, write_code):
    logged_in(probe_course)
    _exercise, feedback = submit(
        page, write_code, "maske", "causal-mask", variant("maske", "mask-zero-scores.py")
    )
    expect(feedback.locator(".probe-diagnoses li").first).to_have_text(
        "Query 0, maskeli bir konum olan Key 1'e 0.274069 ağırlık veriyor. Maskeli bir konum tam "
        "olarak sıfır ağırlık almalı: softmax'tan önce skorunu −∞ yapın (0 da herhangi bir skor "
        "gibi bir skordur)."
    )
    expect_three_heatmaps(feedback)
    # Yours: the three cells above the diagonal carry weight; expected: hatched, none.
    expect(feedback.locator(".probe-map").nth(0).locator("rect.hm-leak")).to_have_count(3)
    expect(feedback.locator(".probe-map").nth(1).locator("rect.hm-masked")).to_have_count(3)
    assert not serious_violations(page, "#ex-causal-mask .probe-feedback")
    ARTIFACTS.mkdir(exist_ok=True)
    page.context.add_cookies([{"name": "django_language", "value": "en", "url": page.base_url}])
    page.reload()
    feedback = page.locator("#ex-causal-mask .probe-feedback")
    expect(feedback.locator(".probe-title")).to_have_text("What your attention weights show")
    expect(feedback.locator(".probe-diagnoses li").first).to_contain_text(
        "Query 0 gives weight 0.274069 to key 1, a masked position."
    )
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        feedback.screenshot(path=str(ARTIFACTS / f"heatmap-feedback-leaky-mask-en-{width}.png"))


@pytest.mark.nojs
def test_the_heatmaps_and_their_table_need_no_javascript(page, probe_course, grading_worker, logged_in):
    logged_in(probe_course)
    page.goto(f"{page.base_url}/kurs/yoklama/olcekleme/")
    exercise = page.locator("#ex-attention-function")
    exercise.get_by_label("Kodunuz (NumPy ile Python)").fill(variant("olcekleme", "no-scaling.py"))
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    result = page.locator("#ex-attention-function [data-result]")
    for _ in range(60):  # without scripts the student follows the "Yenile" link until the verdict is in
        if "Attention ağırlıklarınız ne gösteriyor" in result.inner_text():
            break
        page.wait_for_timeout(500)
        result.get_by_role("link", name="Yenile").click()
    feedback = page.locator("#ex-attention-function .probe-feedback")
    expect_three_heatmaps(feedback)
    feedback.get_by_text("Ağırlıklar tablo olarak").click()  # <details>: opens without scripts
    expect(feedback.locator("table.probe-table tbody tr").nth(1)).to_contain_text("0.67 / 0.51 (+0.16)")
