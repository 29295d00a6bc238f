"""A competition from start to end in real Chromium: staff create it in the audit console, it opens,
two users upload examples/softmax.py through the upload page (which says what entering means), the
window closes (the site's clock moved by time-machine), the standings freeze, a late upload stays
out, the code of the entries opens, an audit disqualifies an entry after the close and the page
lists it, and the export downloads.

Uploads go through the real form and submission_create; each is finished through the worker's own
claim and store_result with a made-up CPU report, so no sandbox runs here (the flows test runs
one). The browser runs in Tokyo's time zone, under the site's Content-Security-Policy: the page's
times must come out in that zone."""
from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta, timezone as dt_timezone
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from leaderboard import services
from leaderboard.models import Submission, Task

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a-long-pass-phrase-9"
FORM_TIME = "%Y-%m-%dT%H:%M:%S"

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture
def tokyo_page(require_chromium, chromium):
    context = chromium.new_context(timezone_id="Asia/Tokyo", locale="en-US", accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.fixture
def own_queue(site, settings):
    """Uploads send their message to a queue of this test's own, which no worker reads."""
    import redis

    settings.EVAL_QUEUE = f"eval-browser-{uuid.uuid4().hex[:8]}"
    yield settings.EVAL_QUEUE
    try:
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2).delete(settings.EVAL_QUEUE)
    except redis.RedisError:
        pass


def cpu_report(task, speedup: float) -> dict:
    shape = task.bench_shapes["cpu"][0]
    return {
        "schema": 1, "verdict": "verified", "reasons": [], "reason_codes": [], "task": task.name,
        "mode": "ranked", "device": "cpu", "gpu_name": None,
        "versions": {"python": "3.11.7", "torch": "2.13.0", "triton": "3.6.0"},
        "speedup_vs_compile": speedup, "speedup_vs_eager": speedup * 1.5,
        "shapes": [{"shape": shape, "candidate_ms": 1.0, "eager_ms": 1.5 * speedup, "compile_ms": speedup,
                    "wall_ms": 1.1, "floor_ms": 0.01, "speedup_vs_compile": speedup,
                    "speedup_vs_eager": speedup * 1.5}],
        "tests": [{"shape": {"M": 7, "N": 131}, "passed": True, "max_abs_err": 1e-7, "message": ""}],
        "phases": {"startup_s": 1.0, "compile_s": 1.0, "correctness_s": 1.0, "timing_s": 1.0},
        "kernels_launched": ["softmax_kernel"], "logs": "timed 3 shapes",
    }


def log_in(page, base: str, username: str):
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.locator("form [type=submit]").click()
    page.wait_for_url(f"{base}/")


def log_out(page):
    page.locator("header form button").click()
    page.wait_for_load_state()


def upload_and_finish(page, base: str, username: str, speedup: float, expect_note: bool = True) -> Submission:
    """Upload examples/softmax.py as `username` through the upload page, then finish it the way
    a worker does."""
    log_in(page, base, username)
    page.get_by_role("link", name="Upload").click()
    if expect_note:  # the form says what entering means
        note = page.inner_text("#competition-softmax-sprint")
        assert "Softmax sprint" in note and "opens to every visitor" in note
    page.select_option("#id_task", "softmax")
    page.check("input[name=mode][value=ranked]")
    page.set_input_files("#id_file", str(ROOT / "examples" / "softmax.py"))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"))
    sub = Submission.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    claimed = services.submission_claim(submission_id=sub.pk, worker="browser-test")
    assert services.submission_store_result(submission=claimed, report=cpu_report(sub.task, speedup))
    log_out(page)
    return sub


def standings_users(page) -> list[str]:
    return [u.strip() for u in page.locator("section.board table.standings tbody td:nth-child(2)").all_inner_texts()]


def test_a_competition_opens_closes_freezes_opens_its_code_and_exports(tokyo_page, site, own_queue, time_machine):
    page, base = tokyo_page, site.url
    User = get_user_model()
    User.objects.create_user("judy", password=PASSWORD, is_staff=True)
    for name in ("alice", "bob"):
        User.objects.create_user(name, password=PASSWORD)
    now = timezone.now().astimezone(dt_timezone.utc).replace(microsecond=0)
    # a competition opens now or later; the site's clock then moves to just past the opening
    opens, closes = now + timedelta(minutes=2), now + timedelta(hours=1)

    # staff create the competition in the audit console
    log_in(page, base, "judy")
    page.get_by_role("link", name="Audit").click()
    page.click("#competitions-link")
    page.click("#new-competition")
    page.fill("#id_slug", "softmax-sprint")
    page.fill("#id_title", "Softmax sprint")
    page.fill("#id_text", "One hour, one task.")
    page.locator("#field-tasks").get_by_label(re.compile(r"\(softmax\)")).check()
    page.locator("#field-device_types").get_by_label("CPU", exact=True).check()
    page.fill("#id_opens_at", opens.strftime(FORM_TIME))
    page.fill("#id_closes_at", closes.strftime(FORM_TIME))
    page.click("#save-competition")
    page.wait_for_url(f"{base}/competitions/softmax-sprint/")
    assert page.get_attribute("#state", "data-state") == "upcoming"
    log_out(page)
    time_machine.move_to(opens + timedelta(seconds=1), tick=True)

    # the page's times in the visitor's zone, the UTC text kept as the title; a live countdown
    page.goto(f"{base}/competitions/softmax-sprint/")
    assert page.get_attribute("#state", "data-state") == "open"
    closes_el = page.locator("#closes-at time")
    tokyo = closes.astimezone(dt_timezone(timedelta(hours=9)))
    assert closes_el.get_attribute("title") == closes.strftime("%Y-%m-%d %H:%M UTC")
    assert tokyo.strftime("%I:%M").lstrip("0") in closes_el.inner_text() and "GMT+9" in closes_el.inner_text()
    first = page.inner_text("#countdown")
    assert re.fullmatch(r"\d+ min \d+ s", first), first
    page.wait_for_timeout(1500)
    assert page.inner_text("#countdown") != first  # it ticks, under the site's script-src 'self'

    # two users upload while it is open
    alice = upload_and_finish(page, base, "alice", speedup=1.3)
    bob = upload_and_finish(page, base, "bob", speedup=1.1)
    page.goto(f"{base}/competitions/softmax-sprint/")
    assert standings_users(page) == ["alice", "bob"]
    page.goto(f"{base}/submissions/{alice.pk}/")
    assert page.locator("#code-private").is_visible()  # not logged in: the code is still private

    # the window closes; a late upload is evaluated and shown, never ranked in the standings
    time_machine.move_to(closes + timedelta(minutes=10), tick=True)
    late = upload_and_finish(page, base, "bob", speedup=2.0, expect_note=False)
    page.goto(f"{base}/competitions/softmax-sprint/")
    assert page.get_attribute("#state", "data-state") == "frozen"
    assert page.locator("#countdown").count() == 0
    assert standings_users(page) == ["alice", "bob"]
    assert f"#{late.pk}" in page.inner_text("#late") and "after the deadline" in page.inner_text("#late")

    # the code of the entries is open to every visitor now
    page.goto(f"{base}/submissions/{bob.pk}/")
    assert "Softmax sprint" in page.inner_text("#code-open")
    assert "custom_kernel" in page.inner_text(".highlight")
    page.goto(f"{base}/submissions/{late.pk}/")
    assert page.locator(".competition-note.late").is_visible()

    # an audit after the close disqualifies alice's entry; the page lists the change
    log_in(page, base, "judy")
    page.goto(f"{base}/audit/{alice.pk}/")
    page.fill("#id_reason", "returns a cached answer")
    page.click("#disqualify")
    page.wait_for_load_state()
    log_out(page)
    page.goto(f"{base}/competitions/softmax-sprint/")
    assert standings_users(page) == ["bob"]
    removed = page.inner_text("#removed")
    assert f"#{alice.pk} by alice" in removed and "returns a cached answer" in removed and "judy" in removed

    # the export downloads: one line per entry, the disqualified one marked
    with page.expect_download() as info:
        page.click("#export-link")
    download = info.value
    assert download.suggested_filename == "softmax-sprint.jsonl"
    lines = [json.loads(x) for x in Path(download.path()).read_text().splitlines()]
    assert [(x["user"], x["rank"]) for x in lines] == [("alice", None), ("bob", 1)]
    assert lines[0]["disqualified"]["reason"] == "returns a cached answer" and lines[0]["source"] is None
    assert lines[1]["source"] == (ROOT / "examples" / "softmax.py").read_text()
    assert lines[1]["task"] == "softmax" and lines[1]["device"] == "cpu" and lines[1]["speedup_vs_compile"] == 1.1
    assert Task.objects.get(name="softmax").competitions.get().frozen_at is not None
