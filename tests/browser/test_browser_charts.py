"""The task page's charts as a visitor sees them in Chromium, on the CPU board (interpreter
timings: speedups far below 1x, times in the hundreds of ms against a floor of microseconds) and on
an H200 board (speedups near 1x, times under a millisecond), at 1280 and 390 px, and a result
page's chart. The axis types, tick labels and marks are read from the figure plotly drew."""
from __future__ import annotations

import os
import re
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard import services
from leaderboard.models import Submission, Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_helpers import H200, SOURCE, report_for  # noqa: E402

pytestmark = [pytest.mark.browser]
CHARTS = ("chart-top", "chart-history", "chart-floor")
# a tick label of a value axis: a plain decimal at 1, 2 or 5 times a power of ten ("0.001x",
# "0.5", "1,000"), never "1e-3" nor a bare "2" or "5" between two powers of ten
TICK = re.compile(r"([125]0*(,000)*|0\.0*[125])x?")
# where screenshots go when a person wants to look at the pages (unset: none are taken)
SHOTS = os.environ.get("CHART_SCREENSHOTS")


def entry(task, name, *, device_type, speedup, eager, ms, minutes_ago=0):
    """A finished ranked entry whose one benchmark shape took `ms`."""
    user = get_user_model().objects.create_user(name, password="a-long-pass-phrase-9")
    device = "cpu" if device_type == "cpu" else "cuda"
    report = report_for(task, device=device, speedup=speedup)
    report["speedup_vs_eager"] = eager
    report["shapes"][0].update(candidate_ms=ms, compile_ms=ms * speedup, eager_ms=ms * eager,
                               speedup_vs_compile=speedup, speedup_vs_eager=eager)
    sub = Submission.objects.create(user=user, task=task, mode="ranked", device_type=device_type,
                                    source=SOURCE, filename="k.py", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report)
    when = timezone.now() - timedelta(minutes=minutes_ago)
    Submission.objects.filter(pk=sub.pk).update(created_at=when, finished_at=when)


def axes(page, chart):
    page.wait_for_selector(f"#{chart}[data-rendered='1']")
    return page.evaluate(
        f"(() => {{ const l = document.getElementById('{chart}')._fullLayout;"
        " return {x: l.xaxis.type, y: l.yaxis.type, xticks: [...document.querySelectorAll("
        f"'#{chart} .xtick text')].map(t => t.textContent), yticks: [...document.querySelectorAll("
        f"'#{chart} .ytick text')].map(t => t.textContent)}}; }})()")


def look(page, url, name):
    """Both widths; returns the axes at 1280 px and checks nothing is clipped at 390 px."""
    found = {}
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        found[width] = {chart: axes(page, chart) for chart in CHARTS}
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        if SHOTS:
            page.screenshot(path=f"{SHOTS}/{name}-{width}.png", full_page=True)
            for chart in CHARTS:
                page.locator(f"#{chart}").screenshot(path=f"{SHOTS}/{name}-{width}-{chart}.png")
    return found[1280]


def test_the_cpu_board_charts_show_interpreter_numbers(page, site):
    task = Task.objects.get(name="softmax")
    entry(task, "slow", device_type="cpu", speedup=0.00134, eager=0.0009, ms=357)
    found = look(page, f"{site.url}/tasks/softmax/?device=cpu", "cpu")
    assert task.floors_for("cpu")[0]["floor_ms"] < 0.01
    # a 0.00134x speedup and a floor of microseconds under 357 ms need a log axis to be seen
    assert found["chart-top"]["y"] == "log"
    assert found["chart-floor"]["y"] == "log"
    assert found["chart-history"]["y"] == "log"
    # one point: the time axis reads as dates, not as a fraction of a second
    assert found["chart-history"]["x"] == "date"
    assert not any("." in t for t in found["chart-history"]["xticks"]), found["chart-history"]["xticks"]
    # labels at the powers of ten, down to the one below the least dot (0.0009x)
    assert found["chart-top"]["yticks"] == ["0.0001x", "0.001x", "0.01x", "0.1x", "1x"]
    for chart in CHARTS:
        assert all(TICK.fullmatch(t) for t in found[chart]["yticks"]), (chart, found[chart]["yticks"])


def test_a_cpu_boards_speedups_are_dots_on_stems_that_end_on_the_1x_line(page, site):
    task = Task.objects.get(name="softmax")
    entry(task, "slow", device_type="cpu", speedup=0.00296, eager=0.0021, ms=357)
    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    page.wait_for_selector("#chart-top[data-rendered='1']")
    assert page.locator("#chart-top .barlayer .point").count() == 0
    assert page.locator("#chart-top .scatterlayer .point").count() == 2
    # per dot, its stem's ends and the pixels of its value and of 1 on the axis plotly drew
    stems = page.evaluate("""(() => {
        const g = document.getElementById('chart-top'), ya = g._fullLayout.yaxis;
        return [...g.querySelectorAll('.scatterlayer .trace')].map((t, i) => {
            const box = t.querySelector('.errorbar path').getBBox();
            return [box.y, box.y + box.height, ya.c2p(1), ya.c2p(g.data[i].y[0])];
        });
    })()""")
    assert len(stems) == 2
    for top, bottom, one, dot in stems:
        assert top == pytest.approx(one, abs=1.5) and bottom == pytest.approx(dot, abs=1.5)
        assert bottom - top > 100  # 0.003x is more than two decades under 1x


def test_a_lone_result_has_its_best_so_far_drawn_on_an_axis_of_about_an_hour(page, site):
    task = Task.objects.get(name="softmax")
    entry(task, "slow", device_type="cpu", speedup=0.00296, eager=0.0021, ms=357, minutes_ago=3)
    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    page.wait_for_selector("#chart-history[data-rendered='1']")
    drawn = page.evaluate("""(() => {
        const g = document.getElementById('chart-history'), xa = g._fullLayout.xaxis;
        const line = g.querySelectorAll('.scatterlayer .trace')[1].querySelector('path.js-line');
        return {width: line ? line.getBBox().width : 0, span: xa.r2l(xa.range[1]) - xa.r2l(xa.range[0]),
                legend: [...g.querySelectorAll('.legendtext')].map(t => t.textContent)};
    })()""")
    assert drawn["legend"] == ["submission", "best so far"]
    assert drawn["width"] > 5, drawn
    assert 3_600_000 <= drawn["span"] < 2 * 3_600_000, drawn


def test_a_best_uploaded_a_moment_ago_shows_as_a_ring(page, site):
    task = Task.objects.get(name="softmax")
    entry(task, "slow", device_type="cpu", speedup=0.00296, eager=0.0021, ms=357)
    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    page.wait_for_selector("#chart-history[data-rendered='1']")
    # the line from the upload to now is about a pixel long; the ring around the dot is drawn
    rings = page.locator("#chart-history .scatterlayer .trace").nth(1).locator(".point")
    assert rings.count() >= 1
    assert rings.first.bounding_box()["width"] >= 10


def test_a_results_floor_is_a_dark_line_across_its_bars_and_its_ticks_read_alike(page, site):
    task = Task.objects.get(name="softmax")
    entry(task, "slow", device_type="cpu", speedup=0.00134, eager=0.0009, ms=357)
    sub = Submission.objects.get(user__username="slow")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/submissions/{sub.pk}/")
        page.wait_for_selector("#chart-result[data-rendered='1']")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        if SHOTS:
            page.screenshot(path=f"{SHOTS}/result-cpu-{width}.png", full_page=True)
            page.locator("#chart-result").screenshot(path=f"{SHOTS}/result-cpu-{width}-chart-result.png")
        ticks = [t.text_content() for t in page.locator("#chart-result .ytick text").all()]
        assert ticks and all(TICK.fullmatch(t) for t in ticks), ticks
        bars = [b.bounding_box() for b in page.locator("#chart-result .barlayer .point path").all()]
        assert len(bars) == 3
        line = page.locator("#chart-result .layer-above .shapelayer path")
        assert line.count() == 1
        box = line.bounding_box()
        assert box["x"] <= min(b["x"] for b in bars) + 1
        assert box["x"] + box["width"] >= max(b["x"] + b["width"] for b in bars) - 1
        # over the bars, whose colours it is not (the floor of microseconds crosses them all)
        assert all(b["y"] < box["y"] < b["y"] + b["height"] for b in bars)
        assert line.evaluate("p => getComputedStyle(p).stroke") == "rgb(17, 17, 17)"


def test_an_h200_board_charts_stay_linear_near_one(page, site):
    task = Task.objects.get(name="softmax")
    for i, (speedup, ms) in enumerate([(1.15, 0.11), (1.08, 0.18), (1.02, 0.35), (0.97, 0.6)]):
        entry(task, f"user{i}", device_type=H200, speedup=speedup, eager=speedup * 1.7, ms=ms,
              minutes_ago=60 * 24 * i)
    found = look(page, f"{site.url}/tasks/softmax/?device={H200}", "h200")
    assert found["chart-top"]["y"] == "linear"
    assert found["chart-history"]["y"] == "linear"


def test_a_single_entrys_floor_is_drawn(page, site):
    task = Task.objects.get(name="softmax")
    entry(task, "slow", device_type="cpu", speedup=0.00134, eager=0.0009, ms=357)
    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    page.wait_for_selector("#chart-floor[data-rendered='1']")
    # the floor trace's points are drawn (a dashed line through one point has no length)
    assert page.locator("#chart-floor .scatterlayer .point").count() == 1
    low = page.evaluate("document.getElementById('chart-floor')._fullLayout.yaxis.range[0]")
    assert 10 ** low < task.floors_for("cpu")[0]["floor_ms"]


def test_at_390px_the_home_and_board_tables_fit_and_the_navigation_takes_two_lines(page, site):
    task = Task.objects.get(name="softmax")
    for i, (speedup, ms) in enumerate([(1.15, 0.11), (0.97, 0.6)]):
        entry(task, f"a-rather-long-name-{i}", device_type=H200, speedup=speedup, eager=speedup * 1.7, ms=ms)
    entry(task, "slow", device_type="cpu", speedup=0.00134, eager=0.0009, ms=357)
    get_user_model().objects.create_user("staffer", password="a-long-pass-phrase-9", is_staff=True)
    page.set_viewport_size({"width": 390, "height": 844})
    cut = {}
    for who in ("anonymous", "staff"):
        if who == "staff":
            page.goto(f"{site.url}/accounts/login/")
            page.fill("#id_username", "staffer")
            page.fill("#id_password", "a-long-pass-phrase-9")
            page.click("#login-form button[type=submit]")
            page.wait_for_url(f"{site.url}/")
        for path in ("/", "/tasks/softmax/?device=cpu", f"/tasks/softmax/?device={H200}"):
            page.goto(site.url + path)
            # every table shows whole: nothing hidden behind a scroll inside its box
            for table in ("#tasks", "#leaderboard"):
                if page.locator(table).count():
                    box = page.evaluate(f"(() => {{ const t = document.querySelector('{table}');"
                                        " return [t.scrollWidth, t.parentElement.clientWidth]; })()")
                    if box[0] > box[1]:
                        cut[f"{who} {path} {table}"] = box
            line = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight)")
            header = page.locator(".site-header").bounding_box()["height"]
            # two lines for a visitor; staff have three more links (Audit, Admin, their name)
            if header > (2 if who == "anonymous" else 3) * line + 30:
                cut[f"{who} {path} header"] = header
            if SHOTS:
                page.screenshot(path=f"{SHOTS}/narrow-{who}-{path.strip('/').replace('/', '_') or 'home'}.png")
    assert not cut, cut
