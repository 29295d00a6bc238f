"""Ties with torch.compile on the back end: a result within the ruler's noise of 1.00 is stored as a
tie (scoring.vs_compile), ranks at 1.00 on the board and in the API, ties in upload order, and is
rescored when its task's calibration on its device type is recorded; the API and the CLI say so."""
import os
import subprocess
import sys

import pytest
from django.urls import reverse

from leaderboard import selectors, services
from leaderboard.models import Submission
from site_helpers import H200, make_done, report_for


@pytest.fixture
def people(db):
    from django.contrib.auth import get_user_model

    return [get_user_model().objects.create_user(f"user{i}", password="pw-tie-12345") for i in range(6)]


def board(task, device_type=H200) -> list[int]:
    return [e.pk for e in selectors.leaderboard_for_task(task=task, device_type=device_type)]


def test_ties_rank_at_one_in_upload_order_between_wins_and_losses(task, people):
    # uncalibrated on the H200: the GPU bound, 1.00 ± 0.03, and these reports carry no spread
    tie_early = make_done(task, people[0], speedup=1.004)
    win = make_done(task, people[1], speedup=1.2)
    tie_low = make_done(task, people[2], speedup=0.98)
    tie_high = make_done(task, people[3], speedup=1.029)
    loss = make_done(task, people[4], speedup=0.9)
    near_win = make_done(task, people[5], speedup=1.031)
    assert [s.vs_compile for s in (tie_early, win, tie_low, tie_high, loss, near_win)] == [
        "tie", "faster", "tie", "tie", "slower", "faster"]
    assert tie_early.board_speedup == 1.0 and win.board_speedup == 1.2 and loss.board_speedup == 0.9
    assert tie_early.vs_compile_low == pytest.approx(0.974) and tie_early.vs_compile_high == pytest.approx(1.034)
    # wins by their speedup, then every tie at 1.00 in the order uploaded (1.029 after 0.98), then losses
    assert board(task) == [win.pk, near_win.pk, tie_early.pk, tie_low.pk, tie_high.pk, loss.pk]


def test_a_users_best_is_a_win_over_a_tie_and_the_earlier_of_two_ties(task, people):
    first_tie = make_done(task, people[0], speedup=1.01)
    make_done(task, people[0], speedup=1.025)  # a larger speedup, still a tie: not better
    assert board(task) == [first_tie.pk]
    win = make_done(task, people[0], speedup=1.05)
    assert board(task) == [win.pk]


def test_recording_a_calibration_rescores_the_tasks_results_on_that_device(task, people):
    sub = make_done(task, people[0], speedup=1.02)
    cpu = make_done(task, people[1], device_type="cpu", speedup=1.02)
    assert (sub.vs_compile, cpu.vs_compile) == ("tie", "tie")
    # a calibrated H200 whose torch.compile read 1.005x against itself: a band of 0.005
    services.task_record_calibration(rows=[{"task": task.name, "reference_vs_eager": 0.998,
                                            "compile_vs_compile": 1.005, "errors": []}],
                                     device_type=H200, source="test")
    sub.refresh_from_db()
    cpu.refresh_from_db()
    assert sub.vs_compile == "faster" and sub.board_speedup == 1.02
    assert sub.vs_compile_low == pytest.approx(1.015)
    assert cpu.vs_compile == "tie"  # another device type's band is not this one's
    # a later calibration outside the bound falls back to the bound: a tie again
    services.task_record_calibration(rows=[{"task": task.name, "reference_vs_eager": 0.998,
                                            "compile_vs_compile": 1.2, "errors": []}],
                                     device_type=H200, source="test")
    sub.refresh_from_db()
    assert sub.vs_compile == "tie" and sub.board_speedup == 1.0


def test_the_runs_own_spread_widens_the_interval(task, people):
    report = report_for(task, speedup=1.05)
    report["shapes"][0].update(speedup_vs_compile_rel_se=0.02, speedup_rounds=20)
    sub = make_done(task, people[0], speedup=1.05)
    narrow = sub.vs_compile
    fresh = Submission.objects.create(user=people[1], task=task, mode="ranked", device_type=H200, source="x",
                                      filename="k.py", celery_task_id="c")
    claimed = services.submission_claim(submission_id=fresh.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report)
    fresh.refresh_from_db()
    # band alone: 1.02 to 1.08, a win; with a spread of 2 %: ± (0.03 + 2 * 1.05 * 0.02) = ± 0.072
    assert narrow == "faster" and fresh.vs_compile == "tie"
    assert fresh.vs_compile_high - fresh.vs_compile_low == pytest.approx(2 * 0.072)


def test_the_api_gives_the_word_and_the_interval(client, task, people):
    tie = make_done(task, people[0], speedup=1.004)
    win = make_done(task, people[1], speedup=1.2)
    test_run = make_done(task, people[2], mode="test")
    body = client.get(reverse("api:leaderboard", args=[task.name]), {"device": H200}).json()
    entries = body["entries"]
    assert [e["submission"] for e in entries] == [win.pk, tie.pk]
    assert entries[0]["vs_compile"] == "faster" and entries[1]["vs_compile"] == "tie"
    assert entries[1]["vs_compile_low"] == pytest.approx(0.974) and entries[1]["vs_compile_high"] == pytest.approx(1.034)
    detail = client.get(reverse("api:submission", args=[tie.pk])).json()
    assert (detail["vs_compile"], detail["speedup_vs_compile"]) == ("tie", 1.004)
    assert detail["vs_compile_low"] <= 1.0 <= detail["vs_compile_high"]
    key = services.api_token_create(user=people[2])[1]
    own = client.get(reverse("api:submission", args=[test_run.pk]), HTTP_AUTHORIZATION=f"Token {key}").json()
    assert own["vs_compile"] is None and own["vs_compile_low"] is None
    tasks = client.get(reverse("api:tasks")).json()["tasks"]
    assert tasks[0]["best_speedup_vs_compile"] == 1.2 and tasks[0]["best_vs_compile"] == "faster"
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert schema["BoardEntry"]["properties"]["vs_compile"]["anyOf"][0]["enum"] == ["faster", "tie", "slower"]
    assert "holds 1.00" in schema["SubmissionOut"]["properties"]["vs_compile"]["description"]


@pytest.mark.django_db(transaction=True)
def test_the_cli_says_tie_with_torch_compile(live_server, task, owner):
    tie = make_done(task, owner, speedup=1.004)
    win = make_done(task, owner, speedup=1.2)
    key = services.api_token_create(user=owner)[1]
    env = {k: v for k, v in os.environ.items() if k not in ("LEADERBOARD_TOKEN", "LEADERBOARD_URL")}
    env["LEADERBOARD_TOKEN"] = key

    def cli(*args):
        done = subprocess.run([sys.executable, "-m", "leaderboard.cli", *map(str, args), "--url", live_server.url],
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = cli("show", tie.pk)
    assert "speedup_vs_compile: 1.00x (tie with torch.compile: 0.974x to 1.03x; ranks at 1.00x)" in out
    assert "faster" not in out
    assert "speedup_vs_compile: 1.20x (faster than torch.compile: 1.17x to 1.23x)" in cli("show", win.pk)
    listed = {line.split()[0]: line for line in cli("list").splitlines() if line.startswith("#")}
    assert "1.00x tie" in listed[f"#{tie.pk}"] and "tie" not in listed[f"#{win.pk}"]


def test_the_migration_fills_the_results_stored_before_it(task, people):
    import importlib

    from django.apps import apps

    tie = make_done(task, people[0], speedup=1.01)
    win = make_done(task, people[1], speedup=1.2)
    test_run = make_done(task, people[2], mode="test")
    Submission.objects.update(vs_compile="", vs_compile_low=None, vs_compile_high=None, board_speedup=None)
    importlib.import_module("leaderboard.migrations.0013_ties").fill(apps, None)
    got = {s.pk: (s.vs_compile, s.board_speedup) for s in Submission.objects.all()}
    assert got == {tie.pk: ("tie", 1.0), win.pk: ("faster", 1.2), test_run.pk: ("", None)}
