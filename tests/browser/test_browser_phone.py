"""Tables on a 390 px phone and the forms' and footer's alignment, in Chromium.

On a phone every table either fits its box or scrolls inside it with a shade at the edge that has
more to show; badges, "125 ms" and a scrolling table's headers keep to one line. The footer starts
where the content starts, the sign-up fields are one width, and an error about the uploaded file
is shown at the file field. `PAGE_SCREENSHOTS=<dir>` saves screenshots of the pages to look at."""
from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import pytest
from browser_helpers import PASSWORD, log_in, user

from leaderboard.models import Submission, Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_helpers import make_done  # noqa: E402

pytestmark = [pytest.mark.browser]
PHONE, DESKTOP = 390, 1280
# where screenshots go when a person wants to look at the pages (unset: none are taken)
SHOTS = os.environ.get("PAGE_SCREENSHOTS")


def shot(page, name: str, width: int) -> None:
    """The page in parts at most 1200 px high: a whole long page shrinks past reading."""
    if not SHOTS:
        return
    height = page.evaluate("document.documentElement.scrollHeight")
    for i, top in enumerate(range(0, height, 1200)):
        page.screenshot(path=f"{SHOTS}/{name}-{width}-{i}.png", full_page=True,
                        clip={"x": 0, "y": top, "width": width, "height": min(1200, height - top)})


def slow_shapes(submission):
    """Three shapes timed in hundreds of milliseconds ("125 ms"), one of them noisy."""
    report = dict(submission.report)
    row = report["shapes"][0]
    report["shapes"] = [
        {**row, "shape": {"M": m, "N": 8192}, "candidate_ms": 125.0, "eager_ms": 250.5, "compile_ms": 180.25,
         "floor_ms": 12.5, "speedup_vs_compile": 1.442, "speedup_vs_eager": 2.004,
         "candidate_p10_ms": 120.0, "candidate_p90_ms": 175.0 if m == 4096 else 130.0,
         "eager_p10_ms": 249.0, "eager_p90_ms": 252.0, "compile_p10_ms": 179.0, "compile_p90_ms": 181.0}
        for m in (1024, 4096, 16384)
    ]
    Submission.objects.filter(pk=submission.pk).update(report=report)
    return submission


@pytest.fixture
def owner_pages(site):
    """A staff owner with a verified test run, a verified ranked run, a rejected run and a flagged
    one: the profile, a result page and an audit item, each with its tables."""
    task = Task.objects.get(name="softmax")
    owner = user("pia", is_staff=True)
    make_done(task, owner, mode="test")
    ranked = slow_shapes(make_done(task, owner, speedup=1.442))
    make_done(task, owner, verdict="rejected", reasons=["the output differs"], codes=["mismatch"])
    flagged = slow_shapes(make_done(task, owner, speedup=2.1, verdict="flagged", codes=["too_fast_vs_compile"],
                                    reasons=["2.10x faster than torch.compile"]))
    return {"profile": "/accounts/profile/", "result": f"/submissions/{ranked.pk}/",
            "audit": f"/audit/{flagged.pk}/"}


def white_pixels(page, png: bytes, columns: list[int]) -> list[int]:
    """How many pixels of each column of a screenshot are white, leaving out two rows at the top
    and the bottom (an element's fractional box is shot to whole pixels, taking in the page): a
    column with a shade over it has none (text and rules are dark anyway; the padding between
    them is white without one)."""
    return page.evaluate("""async ([b64, columns]) => {
        const img = new Image();
        img.src = 'data:image/png;base64,' + b64;
        await img.decode();
        const canvas = document.createElement('canvas');
        canvas.width = img.width; canvas.height = img.height;
        const g = canvas.getContext('2d');
        g.drawImage(img, 0, 0);
        return columns.map(x => {
            const d = g.getImageData(x, 2, 1, img.height - 4).data;
            let white = 0;
            for (let i = 0; i < d.length; i += 4) if (Math.min(d[i], d[i + 1], d[i + 2]) >= 250) white++;
            return white;
        });
    }""", [base64.b64encode(png).decode(), columns])


def shaded_edges(page, box) -> tuple[bool, bool]:
    """Whether the scroll box shows a shade at its (left, right) edge."""
    width = round(box.bounding_box()["width"])
    left, right = white_pixels(page, box.screenshot(), [1, width - 2])
    return left == 0, right == 0


def tables(page):
    return page.locator("main table").all()


@pytest.mark.parametrize("name", ["profile", "result", "audit"])
def test_a_table_on_a_phone_fits_or_scrolls_in_its_box_with_a_shade_where_there_is_more(page, site, owner_pages,
                                                                                        name):
    log_in(page, site.url, "pia")
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.goto(site.url + owner_pages[name])
    page.wait_for_load_state("load")
    if name == "result":  # the chart above the table has its height once drawn
        page.wait_for_selector("#chart-result[data-rendered='1']")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE
    scrolling = []
    for table in tables(page):
        table_id = table.get_attribute("id") or table.get_attribute("class")
        box = table.locator("xpath=..")
        assert box.get_attribute("class") == "table-scroll", table_id
        sizes = box.evaluate("b => [b.scrollWidth, b.clientWidth, b.getBoundingClientRect().right]")
        if sizes[0] <= sizes[1]:
            cells = table.evaluate("t => Math.max(...[...t.querySelectorAll('th, td')].map("
                                   "c => c.getBoundingClientRect().right))")
            assert cells <= sizes[2] + 0.5, table_id
            assert shaded_edges(page, box) == (False, False), table_id
            continue
        scrolling.append(table_id)
        assert shaded_edges(page, box) == (False, True), table_id  # more to the right only
        box.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
        assert shaded_edges(page, box) == (True, False), table_id  # at the end: more to the left only
        box.evaluate("b => { b.scrollLeft = 0; }")
    # the tables too wide for a phone whatever is done: they scroll; the rest fit
    assert scrolling == {"profile": ["submissions"], "result": ["shapes"], "audit": ["shapes"]}[name]
    if SHOTS:
        shot(page, name, PHONE)
        page.set_viewport_size({"width": DESKTOP, "height": 900})
        page.reload()
        if name == "result":
            page.wait_for_selector("#chart-result[data-rendered='1']")
        shot(page, name, DESKTOP)


def lines_of_text(locator) -> list[int]:
    """For each piece of text in the elements: on how many lines it lies."""
    return locator.evaluate_all("""els => els.flatMap(el => {
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        const counts = [];
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            if (!n.textContent.trim()) continue;
            const range = document.createRange();
            range.selectNodeContents(n);
            counts.push(new Set([...range.getClientRects()].map(r => Math.round(r.top))).size);
        }
        return counts;
    })""")


@pytest.mark.parametrize("name", ["profile", "result", "audit"])
def test_badges_numbers_and_a_scrolling_tables_headers_keep_to_one_line_on_a_phone(page, site, owner_pages, name):
    log_in(page, site.url, "pia")
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.goto(site.url + owner_pages[name])
    page.wait_for_load_state("load")
    badges = page.locator("main .badge")
    heights = {round(b["height"]) for b in (badge.bounding_box() for badge in badges.all())}
    assert len(heights) == 1, (name, heights, badges.all_inner_texts())  # one line each, as "Done" is
    assert set(lines_of_text(badges)) == {1}
    numbers = page.locator("main td.num")
    assert numbers.count() and set(lines_of_text(numbers)) == {1}, numbers.all_inner_texts()
    if name != "profile":
        assert "125 ms" in page.locator("#shapes").inner_text()
    for table in tables(page):
        box = table.locator("xpath=..")
        if box.evaluate("b => b.scrollWidth > b.clientWidth"):
            assert set(lines_of_text(table.locator("th"))) == {1}, table.get_attribute("id")


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_the_footer_starts_where_the_content_starts(page, site, width):
    page.set_viewport_size({"width": width, "height": 900})
    for path in ("/", "/scoring/"):
        page.goto(site.url + path)
        lefts = page.evaluate("""() => ['main', 'footer'].map(sel => {
            const el = document.querySelector(sel);
            return el.getBoundingClientRect().left + parseFloat(getComputedStyle(el).paddingLeft);
        })""")
        assert lefts[0] == lefts[1], (path, lefts)
        assert page.locator("footer").bounding_box()["x"] + 1 >= 0


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_the_sign_up_fields_are_one_width_with_errors_or_without(page, site, width):
    user("taken")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{site.url}/accounts/signup/")
    fields = ["#id_username", "#id_email", "#id_password1", "#id_password2"]
    assert len({page.locator(f).bounding_box()["width"] for f in fields}) == 1
    page.fill("#id_username", "taken")
    page.fill("#id_email", "taken@example.org")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD + "x")
    page.click("#signup-form button[type=submit]")
    page.wait_for_selector(".errorlist")
    widths = {f: page.locator(f).bounding_box()["width"] for f in fields}
    assert len(set(widths.values())) == 1, widths
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, "signup-errors", width)


BAD_FILES = {
    "syntax": (b"def custom_kernel(x:\n    pass\n", "not valid Python"),
    "signature": (b"import torch\n\n\ndef custom_kernel(x, y):\n    return x\n", "custom_kernel takes (x)"),
}


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_an_error_in_the_uploaded_file_is_shown_at_the_file_field(page, site, tmp_path, kind, width):
    content, words = BAD_FILES[kind]
    path = tmp_path / "kernel.py"
    path.write_bytes(content)
    user("uma")
    log_in(page, site.url, "uma")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{site.url}/upload/")
    page.select_option("#id_task", "softmax")
    page.set_input_files("#id_file", str(path))
    page.click("#upload-form button[type=submit]")
    error = page.locator(".errorlist", has_text=words)
    error.wait_for()
    assert page.locator(".errorlist.nonfield").count() == 0
    assert error.evaluate("e => e.closest('.field').contains(document.getElementById('id_file'))")
    field = page.locator("#id_file").bounding_box()
    assert error.bounding_box()["y"] >= field["y"] + field["height"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"upload-{kind}", width)


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_the_forms_own_error_stands_apart_from_the_task_field(page, site, width):
    user("uma")
    log_in(page, site.url, "uma")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{site.url}/upload/")
    page.select_option("#id_task", "softmax")
    page.click("#upload-form button[type=submit]")  # neither a file nor code
    error = page.locator(".errorlist.nonfield")
    error.wait_for()
    assert "Choose a .py file or paste your code." in error.inner_text()
    label = page.locator("label[for=id_task]").bounding_box()
    box = error.bounding_box()
    assert label["y"] - (box["y"] + box["height"]) >= 8  # a gap of at least half a line
    shot(page, "upload-nothing", width)
