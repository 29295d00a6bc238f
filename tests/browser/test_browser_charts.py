"""The task page's charts as a visitor sees them in Chromium, on the CPU board (interpreter
timings: speedups far below 1x, times in the hundreds of ms against a floor of microseconds) and on
an H200 board (speedups near 1x, times under a millisecond), at 1280 and 390 px. The axis types
are read from the figure plotly drew."""
from __future__ import annotations

import os
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
        f"'#{chart} .xtick text')].map(t => t.textContent)}}; }})()")


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
    return found[1280]


def test_the_cpu_board_charts_show_interpreter_numbers(page, site):
    task = Task.objects.get(name="softmax")
    entry(task, "slow", device_type="cpu", speedup=0.00134, eager=0.0009, ms=357)
    found = look(page, f"{site.url}/tasks/softmax/?device=cpu", "cpu")
    assert task.floors_for("cpu")[0]["floor_ms"] < 0.01
    # a 0.00134x bar and a floor of microseconds under 357 ms need a log axis to be seen
    assert found["chart-top"]["y"] == "log"
    assert found["chart-floor"]["y"] == "log"
    assert found["chart-history"]["y"] == "log"
    # one point: the time axis reads as dates, not as a fraction of a second
    assert found["chart-history"]["x"] == "date"
    assert not any("." in t for t in found["chart-history"]["xticks"]), found["chart-history"]["xticks"]


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
