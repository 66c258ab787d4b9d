"""The lesson figures in chromium: driven by keyboard, numbers equal to the server's, and
readable tables when JavaScript is off."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from courses.visuals import attention_steps, fmt, load_toy_model, rotate_weights

pytestmark = [pytest.mark.browser]

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "visuals"
LESSON = "/kurs/visuals/figures/"
KEYS = [[1.0, 0.0], [0.0, 1.0]]  # the fixture's [rotate] keys (scaled = true)
PLAYGROUND = {  # the fixture's [playground]
    "Q": [[1.0, 0.0], [0.0, 1.0]],
    "K": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "V": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
}


@pytest.fixture
def visuals_course(transactional_db):
    from courses.importer import import_course
    from courses.models import Course

    import_course(FIXTURE)
    return Course.objects.get(slug="visuals")


@pytest.fixture
def lesson(page, visuals_course, logged_in):
    """The fixture lesson open in chromium; fails the test on any console error (CSP included)."""
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    logged_in(visuals_course)
    page.goto(page.base_url + LESSON)
    yield page
    assert errors == []


def figure(page, name):
    return page.locator(f'figure[data-visual="{name}"]')


def cell_texts(table):
    return [text.strip() for text in table.locator("td[data-i]").all_text_contents()]


def test_rotate_slider_follows_arrow_keys_and_buttons_and_the_bars_follow_the_angle(lesson):
    rotate = figure(lesson, "rotate")
    values = rotate.locator("[data-weight]")
    sent = re.findall(r"data-weight>([^<]*)</text>", lesson.request.get(lesson.url).text())
    assert values.all_text_contents() == sent == [fmt(w) for w in rotate_weights(KEYS, 45, scaled=True)]

    slider = rotate.get_by_label("Query'nin açısı θ")
    slider.focus()
    for _ in range(10):
        lesson.keyboard.press("ArrowLeft")
    expect(rotate.locator("[data-angle-output]")).to_have_text("35°")
    expect(values.first).to_have_text(fmt(rotate_weights(KEYS, 35, scaled=True)[0]))
    assert values.all_text_contents() == [fmt(w) for w in rotate_weights(KEYS, 35, scaled=True)]
    expect(rotate.locator("[data-query]")).to_have_attribute("transform", "rotate(-35 140 140)")
    expect(rotate.locator("[data-readout]")).to_contain_text("θ = 35°: en büyük pay k₁")

    lesson.keyboard.press("Tab")  # to the "↺ 15°" button
    lesson.keyboard.press("Enter")
    lesson.keyboard.press("Enter")
    expect(rotate.locator("[data-angle-output]")).to_have_text("65°")
    assert values.all_text_contents() == [fmt(w) for w in rotate_weights(KEYS, 65, scaled=True)]
    expect(rotate.locator("[data-readout]")).to_contain_text("en büyük pay k₂")
    width = float(rotate.locator("[data-bar-fill]").nth(1).get_attribute("width"))
    assert width == pytest.approx(170 * rotate_weights(KEYS, 65, scaled=True)[1], abs=0.06)


def server_cells(page, key):
    """The playground's cells for ``key`` as the server sent them (before any script ran)."""
    markup = page.request.get(page.url).text()
    table = re.search(rf'data-result="{key}">(.*?)</table>', markup, re.S).group(1)
    return re.findall(r'<td[^>]*data-j="\d+">([^<]*)</td>', table)


def test_playground_recomputes_in_the_browser_exactly_as_the_server_did(lesson):
    playground = figure(lesson, "playground")
    server = attention_steps(PLAYGROUND["Q"], PLAYGROUND["K"], PLAYGROUND["V"])
    for key in ("scores", "scaled", "weights", "output"):
        # visuals.js recomputed every table on load; it must show what NumPy computed.
        assert cell_texts(playground.locator(f'[data-result="{key}"]')) == server_cells(lesson, key), key
        assert cell_texts(playground.locator(f'[data-result="{key}"]')) == [
            fmt(x) for x in server[key].ravel()
        ], key

    field = playground.get_by_label("Q satır 2, sütun 1")
    field.focus()
    lesson.keyboard.press("Control+A")
    lesson.keyboard.type("2")
    changed = attention_steps([[1.0, 0.0], [2.0, 1.0]], PLAYGROUND["K"], PLAYGROUND["V"])
    output = playground.locator('[data-result="output"]')
    expect(output.locator('td[data-i="1"][data-j="0"]')).to_have_text(fmt(changed["output"][1, 0]))
    assert cell_texts(output) == [fmt(x) for x in changed["output"].ravel()]
    assert cell_texts(playground.locator('[data-result="weights"]')) == [
        fmt(x) for x in changed["weights"].ravel()
    ]
    expect(playground.locator("[data-readout]")).to_contain_text("2. Query en çok 3. Key'e bakıyor")
    heaviest = playground.locator('[data-result="weights"] td[data-i="1"][data-j="2"]')
    expect(heaviest).to_have_class(re.compile(rf"heat-{round(changed['weights'][1, 2] * 10)}"))

    causal = playground.get_by_label(re.compile("Causal maske"))
    causal.focus()
    lesson.keyboard.press("Space")
    expect(playground.locator('[data-result="scaled"] td[data-i="0"][data-j="1"]')).to_have_text("−∞")
    masked = attention_steps([[1.0, 0.0], [2.0, 1.0]], PLAYGROUND["K"], PLAYGROUND["V"], causal=True)
    assert cell_texts(output) == [fmt(x) for x in masked["output"].ravel()]

    lesson.keyboard.press("Control+A")  # still on the checkbox: nothing to select, harmless
    field.fill("")
    expect(playground.get_by_role("alert")).to_contain_text("Q satır 2, sütun 1: bir sayı girin")
    expect(field).to_have_attribute("aria-invalid", "true")
    playground.get_by_role("button", name="Varsayılana dön").press("Enter")
    assert cell_texts(output) == [fmt(x) for x in server["output"].ravel()]


def test_heatmap_switches_sentence_and_focused_word_by_keyboard(lesson):
    heatmap = figure(lesson, "heatmap")
    dere, demli = heatmap.locator('[data-panel="dere"]'), heatmap.locator('[data-panel="demli"]')
    expect(dere).to_be_visible()
    expect(demli).to_be_hidden()
    expect(heatmap.locator("[data-readout]")).to_contain_text("“çay” satırı: en büyük pay “Dere”")

    heatmap.get_by_label("Dere", exact=True).focus()
    lesson.keyboard.press("ArrowRight")
    expect(heatmap.get_by_label("Demli", exact=True)).to_be_checked()
    expect(demli).to_be_visible()
    expect(dere).to_be_hidden()
    expect(heatmap.locator("[data-readout]")).to_contain_text("“çay” satırı: en büyük pay “Demli”")

    select = heatmap.get_by_role("combobox", name="Bakan kelime (Query)")
    expect(select.locator("option")).to_have_text(["Demli", "sıcak", "çay"])
    select.focus()
    lesson.keyboard.press("ArrowUp")
    expect(select).to_have_value("1")
    expect(heatmap.locator("[data-readout]")).to_contain_text("“sıcak” satırı")
    expect(heatmap.locator("[data-readout]")).to_contain_text("Sonraki kelimeler (“çay”) pay almıyor")
    expect(demli.locator('tr[data-row="1"]')).to_have_class("is-focus")
    marker = demli.locator("[data-focus-row]")
    middle = float(marker.get_attribute("y")) + float(marker.get_attribute("height")) / 2
    assert middle == pytest.approx(float(demli.locator('text[data-row="1"]').get_attribute("y")))
    # Switching the sentence keeps the page still: every panel reserves the same room.
    box = demli.locator("svg").bounding_box()
    heatmap.get_by_label("Demli", exact=True).focus()
    lesson.keyboard.press("ArrowLeft")
    expect(dere).to_be_visible()
    assert dere.locator("svg").bounding_box()["height"] == pytest.approx(box["height"])


def test_blend_switches_sentence_by_keyboard_and_names_where_cay_goes(lesson):
    blend = figure(lesson, "blend")
    model = load_toy_model(FIXTURE / "01-figures")
    expect(blend.locator('[data-panel="demli"]')).to_be_hidden()
    blend.get_by_label("Dere", exact=True).focus()
    lesson.keyboard.press("ArrowRight")
    expect(blend.locator('[data-panel="demli"]')).to_be_visible()
    expect(blend.locator('[data-panel="dere"]')).to_be_hidden()
    expect(blend.locator("[data-readout]")).to_contain_text("Demli: “çay” (1,00; 1,00) →")
    from courses.visuals import blend_steps, fmt_vector

    new = blend_steps(model, model.sentences[1])["new"]
    expect(blend.locator('[data-panel="demli"] [data-new]')).to_have_text(fmt_vector(new))


@pytest.mark.nojs
def test_without_javascript_every_figure_is_a_readable_table(page, visuals_course, logged_in):
    logged_in(visuals_course)
    page.goto(page.base_url + LESSON)
    for name in ("heatmap", "rotate", "blend", "playground"):
        expect(figure(page, name).locator("table").first).to_be_visible()
        expect(figure(page, name).locator("figcaption")).to_be_visible()
        expect(figure(page, name).locator(".visual-controls")).to_be_hidden()
    # Both sentences are shown, one after the other.
    expect(figure(page, "heatmap").locator('[data-panel="demli"]')).to_be_visible()
    weights = load_toy_model(FIXTURE / "01-figures").self_attention(
        load_toy_model(FIXTURE / "01-figures").sentences[0]
    )["weights"]
    row = figure(page, "heatmap").locator('[data-panel="dere"] tr[data-row="2"] td')
    expect(row).to_have_text([fmt(w) for w in weights[2]])
    playground = figure(page, "playground")
    expect(playground.get_by_label("Q satır 1, sütun 1")).to_have_attribute("readonly", "")
    server = attention_steps(PLAYGROUND["Q"], PLAYGROUND["K"], PLAYGROUND["V"])
    assert cell_texts(playground.locator('[data-result="output"]')) == [
        fmt(x) for x in server["output"].ravel()
    ]
    rotate_row = figure(page, "rotate").locator('tr[data-angle="90"] td')
    expect(rotate_row).to_have_text([fmt(w) for w in rotate_weights(KEYS, 90, scaled=True)])


@pytest.mark.skipif(
    not os.environ.get("DIKKAT_SCREENSHOTS"), reason="set DIKKAT_SCREENSHOTS=folder to look at the figures"
)
@pytest.mark.parametrize("course", ["fixture", "attention"])
def test_screenshots_of_the_figures(page, transactional_db, logged_in, course):
    """Not a check: pictures of every figure, light and dark, wide and phone-sized, to look at."""
    from courses.importer import import_course
    from courses.models import Course

    folder = Path(os.environ["DIKKAT_SCREENSHOTS"])
    folder.mkdir(parents=True, exist_ok=True)
    if course == "fixture":
        import_course(FIXTURE)
        lessons = {LESSON: ("heatmap", "rotate", "blend", "playground")}
    else:
        import_course(Path(__file__).resolve().parents[2] / "courses" / "content" / "attention")
        lessons = {
            "/kurs/attention/visual-attention/": ("heatmap", "rotate", "blend"),
            "/kurs/attention/scaled-dot-product/": ("playground",),
        }
    logged_in(Course.objects.get(slug="visuals" if course == "fixture" else "attention"))
    for url, names in lessons.items():
        page.goto(page.base_url + url)
        for scheme in ("light", "dark"):
            for width in (1100, 390):
                page.emulate_media(color_scheme=scheme)
                page.set_viewport_size({"width": width, "height": 900})
                for name in names:
                    figure(page, name).screenshot(path=str(folder / f"{course}-{name}-{scheme}-{width}.png"))
                    second = figure(page, name).locator(".choice-group input").nth(1)
                    if second.count():
                        second.check()
                        figure(page, name).screenshot(
                            path=str(folder / f"{course}-{name}-2-{scheme}-{width}.png")
                        )
                        figure(page, name).locator(".choice-group input").first.check()


def test_playground_reads_a_decimal_comma_or_dot_and_says_so_for_junk(lesson):
    playground = figure(lesson, "playground")
    field = playground.get_by_label("Q satır 2, sütun 1")
    output = playground.locator('[data-result="output"]')
    error = playground.get_by_role("alert")
    for typed in ("1,5", "1.5", "−1,5", "2e-1"):
        field.fill(typed)
        value = float(typed.replace(",", ".").replace("−", "-"))
        changed = attention_steps([[1.0, 0.0], [value, 1.0]], PLAYGROUND["K"], PLAYGROUND["V"])
        expect(output.locator('td[data-i="1"][data-j="0"]')).to_have_text(fmt(changed["output"][1, 0]))
        expect(field).to_have_attribute("aria-invalid", "false")
        expect(error).to_be_hidden()
    last_good = cell_texts(output)
    for junk in ("abc", "1.234,5", "1,5,", ""):
        field.fill(junk)
        expect(error).to_be_visible()
        expect(error).to_contain_text("Q satır 2, sütun 1: bir sayı girin, örneğin 1,5 ya da -0.5")
        expect(field).to_have_attribute("aria-invalid", "true")
        assert cell_texts(output) == last_good  # never a guess computed from junk
    playground.get_by_role("button", name="Varsayılana dön").click()
    expect(field).to_have_value("0")
    expect(playground.get_by_label("Q satır 1, sütun 1")).to_have_value("1")
    expect(error).to_be_hidden()
