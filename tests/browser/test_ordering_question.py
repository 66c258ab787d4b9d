"""An ordering question as students use it: by keyboard only (Tab, Alt+↑, a button), by a
finger dragging a step's handle on a phone, and with JavaScript off through the selects. Each
way ends in the same form the server grades."""

import pytest
from conftest import console_problems
from playwright.sync_api import expect
from test_ordering_kind import QUESTION
from test_rendered_text import write_course

from browser.test_accessibility import serious_violations
from browser.test_keyboard import tab_to

pytestmark = [pytest.mark.browser]

LESSON = "/kurs/yazili/ders/"
TEXTS = {
    "scores": "Skorlar",
    "scale": "Ölçekleme",
    "mask": "Maske",
    "softmax": "Softmax",
    "blend": "Harmanlama",
    "divide-dk": "d_k'ya bölme",
}


@pytest.fixture
def course(transactional_db, tmp_path):
    from courses.importer import import_course
    from courses.models import Course

    import_course(write_course(tmp_path, QUESTION.format(extra="")))
    return Course.objects.get(slug="yazili")


def used_order(question) -> list[str]:
    return [t.strip() for t in question.locator("[data-used] .ordering-text").all_inner_texts()]


def place_of(question, step_id) -> str:
    return question.locator("[data-step]", has_text=TEXTS[step_id]).locator("select").input_value()


def test_reorder_by_keyboard_leave_a_step_out_and_check(page, course, logged_in):
    logged_in(course)
    page.goto(page.base_url + LESSON)
    question = page.locator("#q-adimlar")
    expect(question.locator(".ordering-live")).to_be_visible()
    expect(question.locator(".ordering-place").first).to_be_hidden()  # the selects work unseen
    status = question.locator("[data-status]")

    # Forward through the list: Tab to the step that belongs at place i (it is below the
    # ones already placed), then Alt+↑ until it is there; focus stays on the step it moves.
    target = ["scores", "scale", "mask", "softmax", "blend"]
    for index, step_id in enumerate(target):
        step = question.locator("[data-used] [data-step]", has_text=TEXTS[step_id])
        tab_to(page, step)
        moves = used_order(question).index(TEXTS[step_id]) - index
        for _ in range(moves):
            page.keyboard.press("Alt+ArrowUp")
        expect(step).to_be_focused()
        expect(step).to_have_accessible_description("Alt+↑ veya Alt+↓ bu adımı yukarı ya da aşağı taşır.")
        assert used_order(question)[index] == TEXTS[step_id]
        if moves:  # the shuffled list may already have it in its place: then nothing is said
            expect(status).to_have_text(f"«{TEXTS[step_id]}»: {index + 1}. sıraya taşındı.")
    # The distractor is last now: its "Dışarıda bırak" button moves it to the unused steps.
    leave_out = question.locator("[data-step]", has_text=TEXTS["divide-dk"]).get_by_role(
        "button", name="Dışarıda bırak"
    )
    tab_to(page, leave_out)
    page.keyboard.press("Enter")
    unused = question.locator("[data-unused] [data-step]")
    expect(unused).to_have_count(1)
    expect(unused).to_contain_text(TEXTS["divide-dk"])
    expect(unused.get_by_role("button", name="Kullan", exact=True)).to_be_visible()
    expect(status).to_have_text("«d_k'ya bölme»: kullanmadığınız adımlara taşındı.")
    assert used_order(question) == [TEXTS[s] for s in target]
    assert [place_of(question, s) for s in (*target, "divide-dk")] == ["1", "2", "3", "4", "5", "0"]

    tab_to(page, question.get_by_role("button", name="Cevabımı kontrol et"))
    page.keyboard.press("Enter")
    expect(question.locator("[data-feedback]")).to_contain_text("Doğru!")
    # The fresh question from the server is a list to drag again, in the order just given.
    fresh = page.locator("#q-adimlar")
    expect(fresh.locator(".ordering-live")).to_be_visible()
    assert used_order(fresh) == [TEXTS[s] for s in target]
    assert serious_violations(page) == []


def test_alt_arrows_move_a_step_down_and_say_where_it_stays(page, course, logged_in):
    logged_in(course)
    page.goto(page.base_url + LESSON)
    question = page.locator("#q-adimlar")
    first = question.locator("[data-used] [data-step]").first
    text = first.locator(".ordering-text").inner_text().strip()
    tab_to(page, first)
    page.keyboard.press("Alt+ArrowDown")
    assert used_order(question)[1] == text
    expect(question.locator("[data-status]")).to_have_text(f"«{text}»: 2. sıraya taşındı.")
    page.keyboard.press("Alt+ArrowUp")
    page.keyboard.press("Alt+ArrowUp")  # already first: it stays, and says so
    expect(question.locator("[data-status]")).to_have_text(f"«{text}» 1. sırada kalıyor.")
    assert used_order(question)[0] == text


@pytest.fixture
def phone(browser, live_server, course, make_user):
    """A logged-in, enrolled student on a 390 px touch screen at the lesson."""
    user = make_user("telefon", password="Gizli-parola-2026")
    course.enroll(user)
    context = browser.new_context(
        locale="tr-TR",
        viewport={"width": 390, "height": 844},
        has_touch=True,
        is_mobile=True,
        device_scale_factor=2,
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    problems = console_problems(page)
    page.goto(live_server.url + "/accounts/login/")
    page.locator("#id_username").fill("telefon")
    page.locator("#id_password").fill("Gizli-parola-2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.goto(live_server.url + LESSON)
    yield page
    context.close()
    assert problems == []


def finger_drag(page, start, end, steps=12):
    cdp = page.context.new_cdp_session(page)

    def touch(kind, points):
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    touch("touchStart", [{"x": start[0], "y": start[1]}])
    for step in range(1, steps + 1):
        x = start[0] + (end[0] - start[0]) * step / steps
        y = start[1] + (end[1] - start[1]) * step / steps
        touch("touchMove", [{"x": x, "y": y}])
    touch("touchEnd", [])


def middle(box):
    return (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def test_a_finger_drags_a_step_by_its_handle_to_the_top_and_out(phone):
    question = phone.locator("#q-adimlar")
    question.scroll_into_view_if_needed()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390  # fits the phone
    last = question.locator("[data-used] [data-step]").last
    text = last.locator(".ordering-text").inner_text().strip()
    top = question.locator("[data-used] [data-step]").first.bounding_box()
    finger_drag(phone, middle(last.locator(".ordering-grip").bounding_box()), (top["x"] + 20, top["y"] + 4))
    assert used_order(question)[0] == text
    expect(question.locator("[data-status]")).to_have_text(f"«{text}»: 1. sıraya taşındı.")
    assert question.locator("[data-step]", has_text=text).locator("select").input_value() == "1"

    # Onto the box of unused steps: left out, its select says so.
    step = question.locator("[data-used] [data-step]", has_text=TEXTS["divide-dk"])
    finger_drag(
        phone,
        middle(step.locator(".ordering-grip").bounding_box()),
        middle(question.locator("[data-unused]").bounding_box()),
    )
    expect(question.locator("[data-unused] [data-step]")).to_have_count(1)
    assert place_of(question, "divide-dk") == "0"
    assert len(used_order(question)) == 5


def test_a_finger_on_the_text_scrolls_instead_of_dragging(phone):
    question = phone.locator("#q-adimlar")
    question.scroll_into_view_if_needed()
    before = used_order(question)
    first = question.locator("[data-used] [data-step]").first
    box = first.locator(".ordering-text").bounding_box()
    finger_drag(phone, (box["x"] + 10, box["y"] + 5), (box["x"] + 10, box["y"] + 300))
    assert used_order(question) == before


@pytest.mark.nojs
def test_without_javascript_the_selects_order_the_steps(page, course, logged_in):
    logged_in(course)
    page.goto(page.base_url + LESSON)
    question = page.locator("#q-adimlar")
    expect(question.get_by_text("Kullanmadığınız adımlar")).to_be_hidden()
    places = {"scores": "1", "mask": "2", "scale": "3", "softmax": "4", "blend": "5", "divide-dk": "0"}
    for step_id, place in places.items():
        select = question.get_by_role("combobox", name=f"Sıra: «{TEXTS[step_id]}»")
        select.select_option(place)
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    question = page.locator("#q-adimlar")
    expect(question.locator("[data-feedback]")).to_contain_text("Doğru!")
    for step_id, place in places.items():
        assert place_of(question, step_id) == place  # the answer given, shown again


def test_a_mouse_drags_a_step_by_its_text(page, course, logged_in):
    logged_in(course)
    page.goto(page.base_url + LESSON)
    question = page.locator("#q-adimlar")
    steps = question.locator("[data-used] [data-step]")
    text = steps.nth(3).locator(".ordering-text").inner_text().strip()
    start = steps.nth(3).locator(".ordering-text").bounding_box()
    top = steps.first.bounding_box()
    page.mouse.move(start["x"] + 10, start["y"] + 5)
    page.mouse.down()
    page.mouse.move(start["x"] + 10, top["y"] + 4, steps=8)
    page.mouse.up()
    assert used_order(question)[0] == text
    assert question.locator("[data-step]", has_text=text).locator("select").input_value() == "1"


def test_a_drag_to_the_top_edge_scrolls_a_list_longer_than_the_screen(phone):
    phone.set_viewport_size({"width": 390, "height": 420})
    question = phone.locator("#q-adimlar")
    last = question.locator("[data-used] [data-step]").last
    text = last.locator(".ordering-text").inner_text().strip()
    last.scroll_into_view_if_needed()
    assert not question.locator("[data-used] [data-step]").first.evaluate(
        "e => e.getBoundingClientRect().bottom > 0"
    )  # the first step is off the screen
    start = middle(last.locator(".ordering-grip").bounding_box())
    cdp = phone.context.new_cdp_session(phone)

    def touch(kind, y):
        cdp.send(
            "Input.dispatchTouchEvent", {"type": kind, "touchPoints": [{"x": start[0], "y": y}] if y else []}
        )

    touch("touchStart", start[1])
    for y in range(int(start[1]), 20, -40):
        touch("touchMove", y)
    for wiggle in range(40):  # held at the top edge: the page scrolls up under the finger
        touch("touchMove", 20 + wiggle % 2)
    touch("touchEnd", None)
    assert phone.evaluate("window.scrollY") < 300
    assert used_order(question)[0] == text


@pytest.mark.console_allows(r"Failed to load resource")
def test_the_script_starting_moves_nothing_on_the_page(page, course, logged_in):
    # The page as it is painted before the script has run (here: never runs), then with it.
    logged_in(course)

    def layout():
        question = page.locator("#q-adimlar")
        return [
            round(box["y"] + box["height"])
            for box in (
                question.locator("fieldset").bounding_box(),
                question.get_by_role("button", name="Cevabımı kontrol et").bounding_box(),
            )
        ]

    page.route("**/js/ordering.js", lambda route: route.abort())
    page.goto(page.base_url + LESSON)
    before = layout()
    expect(page.locator("#q-adimlar .ordering-live")).to_have_count(0)
    page.unroute("**/js/ordering.js")
    page.goto(page.base_url + LESSON)
    expect(page.locator("#q-adimlar .ordering-live")).to_have_count(1)
    after = layout()
    assert all(abs(a - b) <= 2 for a, b in zip(after, before)), (before, after)  # a pixel of rounding
