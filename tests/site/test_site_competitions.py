"""Competitions with the clock under the test's control (time-machine): open, submit, close, a late
submission, the freeze, code opening, a disqualification after the close, and the export.

Uploads go through services.submission_create and finish through the worker's own claim and
store_result; only the evaluator's report is made up (site_helpers.report_for)."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from leaderboard import selectors, services
from leaderboard.models import AuditEntry, Competition, Submission
from leaderboard.selectors import competitions as reads
from leaderboard.selectors.export import NotReady, competition_export_lines
from leaderboard.services import competitions, opencode

from clock_helpers import T0
from site_helpers import finish, report_for, upload

pytestmark = pytest.mark.django_db

OPENS, CLOSES = T0 + timedelta(hours=1), T0 + timedelta(hours=3)





@pytest.fixture
def race(task, staff, at):
    competition = Competition(slug="spring-race", title="Spring race", text="Fastest softmax wins.",
                              device_types=["cpu"], opens_at=OPENS, closes_at=CLOSES)
    return competitions.competition_save(competition=competition, tasks=[task], actor=staff)


def board(competition, task, device="cpu"):
    competition.refresh_from_db()
    found = [b for b in reads.standings(competition=competition) if b.task == task and b.device_type == device]
    return found[0]


def names(b) -> list[str]:
    return [r["username"] for r in b.rows]


def test_only_uploads_inside_the_window_enter_one_best_per_user(task, users, race, at):
    at(0.5)
    early = finish(upload(users["ann"], task), speedup=3.0)  # before the opening
    assert reads.competition_state(competition=race) == reads.UPCOMING
    at(1)  # the opening instant belongs to the window
    assert reads.competition_state(competition=race) == reads.OPEN
    finish(upload(users["ann"], task), speedup=1.1)
    at(1.5)
    best = finish(upload(users["ann"], task), speedup=1.4)
    ben = finish(upload(users["ben"], task), speedup=1.3)
    finish(upload(users["cy"], task, mode="test"))  # test runs never rank
    rows = board(race, task).rows
    assert [(r["username"], r["submission_id"]) for r in rows] == [("ann", best.pk), ("ben", ben.pk)]
    assert early.pk not in [r["submission_id"] for r in rows]
    # the permanent board still has ann's fastest, the one from before the opening
    assert selectors.leaderboard_for_task(task=task, device_type="cpu")[0].pk == early.pk


def test_standings_are_per_device(task, users, race, at, settings):
    race.device_types = ["cpu", "cuda:NVIDIA H200"]
    competitions.competition_save(competition=race, tasks=[task], actor=None)
    at(2)
    finish(upload(users["ann"], task), speedup=1.2)
    settings.WORKER_DEVICE, settings.WORKER_GPU_NAME = "cuda", "NVIDIA H200"
    gpu = upload(users["ben"], task)
    claimed = services.submission_claim(submission_id=gpu.pk, worker="gpu0")
    assert services.submission_store_result(submission=claimed, report=report_for(task, device="cuda", speedup=1.5))
    assert names(board(race, task, "cpu")) == ["ann"]
    assert names(board(race, task, "cuda:NVIDIA H200")) == ["ben"]


def test_close_late_upload_and_the_freeze_waiting_for_results(task, users, race, at):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.2)
    at(2.99)
    ben_upload = upload(users["ben"], task)  # in time, evaluated after the close
    at(3)  # the closing instant is already late
    late = upload(users["cy"], task)
    assert reads.competition_state(competition=race) == reads.SETTLING
    assert reads.pending_count(competition=race) == 1  # ben's; cy's is after the deadline
    assert competitions.competition_freeze(competition=race) is False
    assert not Competition.objects.get(pk=race.pk).frozen_at

    at(3.2)
    finish(ben_upload, speedup=1.5)
    finish(late, speedup=9.0)  # still evaluated and stored
    assert competitions.competitions_freeze_due() == 1
    race.refresh_from_db()
    assert race.frozen_at == T0 + timedelta(hours=3.2)
    assert reads.competition_state(competition=race) == reads.FROZEN
    assert names(board(race, task)) == ["ben", "ann"]
    assert [s.pk for s in reads.after_deadline(competition=race)] == [late.pk]
    late.refresh_from_db()
    assert late.is_ranked  # it ranks on the permanent board
    assert reads.competitions_for_submission(submission=late) == [{"competition": race, "late": True}]
    assert reads.competitions_for_submission(submission=ann) == [{"competition": race, "late": False}]


def test_frozen_standings_ignore_later_approvals_reruns_and_bans(task, users, race, staff, at):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.2)
    at(4)
    assert competitions.competitions_freeze_due() == 1
    services.submission_rerun(submission=ann, actor=staff, reason="new evaluator")  # after the freeze
    ann = finish(ann, speedup=3.0, verdict="flagged", codes=("too_fast_vs_compile",))
    services.submission_approve(submission=ann, actor=staff, reason="honest")
    assert Submission.objects.get(pk=ann.pk).speedup_vs_compile == 3.0
    services.user_ban(user=users["ann"], actor=staff, reason="elsewhere")
    rows = board(race, task).rows
    assert [(r["username"], r["speedup_vs_compile"]) for r in rows] == [("ann", 1.2)]


def test_flagged_results_in_the_window_hold_the_freeze_until_reviewed(task, users, race, staff, at):
    at(2)
    finish(upload(users["ann"], task), speedup=1.2)
    ben = finish(upload(users["ben"], task), speedup=1.9, verdict="flagged", codes=("too_fast_vs_compile",))
    cy = finish(upload(users["cy"], task), speedup=1.1, verdict="flagged", codes=("too_fast_vs_compile",))
    at(3.5)
    late = finish(upload(users["ann"], task), speedup=2.5, verdict="flagged", codes=("too_fast_vs_compile",))
    assert [s.pk for s in reads.awaiting_review(competition=race)] == [ben.pk, cy.pk]  # not the late one
    assert reads.evaluating_count(competition=race) == 0 and reads.pending_count(competition=race) == 2
    assert set(reads.reviews_holding()) == {ben.pk, cy.pk}
    assert competitions.competitions_freeze_due() == 0
    assert reads.competition_state(competition=race) == reads.SETTLING

    at(5)
    services.submission_approve(submission=ben, actor=staff, reason="checked by hand")
    assert competitions.competitions_freeze_due() == 0  # cy still waits
    services.submission_disqualify(submission=cy, actor=staff, reason="reads the answer")
    assert reads.pending_count(competition=race) == 0 and reads.reviews_holding() == {}
    assert competitions.competitions_freeze_due() == 1
    assert names(board(race, task)) == ["ben", "ann"]  # the approved result entered
    assert late.pk not in [r["submission_id"] for r in board(race, task).rows]


def test_uploads_from_before_the_competition_existed_never_count(task, users, staff, at):
    at(0)
    before = finish(upload(users["ann"], task), speedup=3.0)
    at(1)
    # a window reaching back before the competition existed (saved directly, past the service's
    # check): what was uploaded before it existed still stays out
    race = Competition.objects.create(slug="back-dated", title="Back-dated", device_types=["cpu"],
                                      opens_at=T0 - timedelta(days=1), closes_at=CLOSES, created_by=staff)
    race.tasks.set([task])
    at(2)
    ben = finish(upload(users["ben"], task), speedup=1.1)
    assert names(board(race, task)) == ["ben"]
    assert reads.competitions_for_submission(submission=before) == []
    at(4)
    assert competitions.competitions_freeze_due() == 1
    assert [r["submission_id"] for r in board(race, task).rows] == [ben.pk]
    before.refresh_from_db()
    assert selectors.code_open_reason(submission=before) == ""  # its code stays private
    assert not selectors.code_visible(submission=before, user=users["cy"])


def test_a_window_cannot_open_in_the_past_nor_move_its_opening_back(task, race, staff, at):
    at(0.5)
    race.opens_at = T0 + timedelta(hours=0.75)  # earlier, still ahead: fine
    competitions.competition_save(competition=race, tasks=[task], actor=staff)
    race.opens_at = T0 + timedelta(hours=0.25)
    with pytest.raises(ValidationError) as info:
        competitions.competition_save(competition=race, tasks=[task], actor=staff)
    assert "opening can move earlier only to now or later" in info.value.message_dict["opens_at"][0]
    at(2)  # open now
    race.opens_at = T0 + timedelta(hours=0.5)
    with pytest.raises(ValidationError, match="opening can move earlier only to now or later"):
        competitions.competition_save(competition=race, tasks=[task], actor=staff)
    assert Competition.objects.get(pk=race.pk).opens_at == T0 + timedelta(hours=0.75)

    past = Competition(slug="past", title="Past", device_types=["cpu"], opens_at=T0 + timedelta(hours=1.5),
                       closes_at=T0 + timedelta(hours=5))
    with pytest.raises(ValidationError) as info:
        competitions.competition_save(competition=past, tasks=[task], actor=staff)
    assert set(info.value.message_dict) == {"opens_at"}
    assert "opening time is in the past" in info.value.message_dict["opens_at"][0]
    past.opens_at = T0 + timedelta(hours=2)  # now
    competitions.competition_save(competition=past, tasks=[task], actor=staff)
    assert Competition.objects.filter(slug="past").exists()


def test_after_the_deadline_lasts_the_grace_period(task, users, race, at, settings):
    settings.COMPETITION_LATE_DAYS = 14
    at(3 + 24 * 13)
    within = finish(upload(users["ann"], task), speedup=2.0)
    at(3 + 24 * 15)
    later = finish(upload(users["ben"], task), speedup=2.0)
    assert [s.pk for s in reads.after_deadline(competition=race)] == [within.pk]
    assert reads.competitions_for_submission(submission=within) == [{"competition": race, "late": True}]
    assert reads.competitions_for_submission(submission=later) == []
    settings.COMPETITION_LATE_DAYS = 30
    assert [s.pk for s in reads.after_deadline(competition=race)] == [later.pk, within.pk]


def test_a_bare_cuda_device_type_is_refused(task, staff, at):
    c = Competition(slug="gpu", title="GPU", device_types=["cuda", "cpu"], opens_at=OPENS, closes_at=CLOSES)
    with pytest.raises(ValidationError) as info:
        competitions.competition_save(competition=c, tasks=[task], actor=staff)
    assert set(info.value.message_dict) == {"device_types"}
    assert '"cuda" alone names no results' in info.value.message_dict["device_types"][0]
    c.device_types = ["cuda:", "cpu"]
    with pytest.raises(ValidationError, match="Unknown device type"):
        competitions.competition_save(competition=c, tasks=[task], actor=staff)
    c.device_types = ["cuda:NVIDIA H200", "cpu"]
    competitions.competition_save(competition=c, tasks=[task], actor=staff)
    assert Competition.objects.get(slug="gpu").device_types == ["cpu", "cuda:NVIDIA H200"]


def test_code_opens_at_the_freeze_and_staff_withholding_wins(task, users, race, staff, at):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.2)
    ben = finish(upload(users["ben"], task), speedup=1.1)
    mine = finish(upload(users["cy"], task, mode="test"))
    mine = services.submission_publish(submission=mine, actor=users["cy"])  # an owner may publish earlier
    assert selectors.code_open_reason(submission=mine).startswith("published by its owner")
    assert selectors.code_open_reason(submission=ann) == ""
    at(3.5)
    assert selectors.code_open_reason(submission=ann) == ""  # closed but not frozen yet
    competitions.competitions_freeze_due()
    reason = selectors.code_open_reason(submission=ann)
    assert "Spring race" in reason and "2030-03-01 15:00" in reason
    assert selectors.code_visible(submission=ann, user=users["ben"])

    opencode.submission_withhold(submission=ann, actor=staff, reason="holds a licensed snippet")
    opencode.submission_withhold(submission=mine, actor=staff, reason="same")
    for sub in (ann, mine):
        sub.refresh_from_db()
        assert selectors.code_open_reason(submission=sub) == ""
        assert not selectors.code_visible(submission=sub, user=users["ben"])
        assert selectors.code_visible(submission=sub, user=sub.user)  # the owner still reads it
    assert AuditEntry.objects.filter(submission=ann, action="withhold", actor=staff).exists()
    with pytest.raises(ValidationError, match="reason is required"):
        opencode.submission_withhold(submission=ben, actor=staff, reason=" ")
    with pytest.raises(ValidationError, match="Only staff"):
        opencode.submission_withhold(submission=ben, actor=users["cy"], reason="mine now")
    opencode.submission_release(submission=ann, actor=staff)
    ann.refresh_from_db()
    assert "Spring race" in selectors.code_open_reason(submission=ann)


def test_a_disqualification_after_the_close_removes_the_entry_and_is_listed(task, users, race, staff, at):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.5)
    finish(upload(users["ben"], task), speedup=1.2)
    finish(upload(users["cy"], task), speedup=1.1)
    at(4)
    competitions.competitions_freeze_due()
    assert names(board(race, task)) == ["ann", "ben", "cy"]
    at(5)
    services.submission_disqualify(submission=ann, actor=staff, reason="caches the output across calls")
    b = board(race, task)
    assert [(r["rank"], r["username"], r["rank_at_freeze"]) for r in b.rows] == [(1, "ben", 2), (2, "cy", 3)]
    [removed] = b.removed
    assert removed["username"] == "ann" and removed["rank"] == 1
    assert removed["reason"] == "caches the output across calls" and removed["removed_by"] == "staff"
    assert removed["removed_at"] == T0 + timedelta(hours=5)
    ann.refresh_from_db()
    assert selectors.code_open_reason(submission=ann) == ""  # no longer an entry


# what the evaluator records about how it ran: for staff, never in the export
STAFF_ONLY = {
    "isolation": {"runner_uid": 65534, "pid_namespace": True},
    "sanitizer": [{"tool": "memcheck", "ok": True, "findings": [], "seconds": 3.0, "note": "clean"}],
    "compile_cache": "6 files (1 KiB) of autotuning picks copied from the judge's cache",
    "timing_gate": "on (95 us per cycle)",
    "ceilings": {"bandwidth_bytes_s": 4.27e12},
}
PUBLIC_REPORT = {"schema", "task", "mode", "device", "gpu_name", "verdict", "reasons", "reason_codes", "versions",
                 "speedup_vs_compile", "speedup_vs_eager", "shapes", "tests", "phases"}


def test_the_export_has_one_line_per_entry_and_source_only_when_open(task, users, race, staff, at, tmp_path):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.5, extra=STAFF_ONLY)
    ben = finish(upload(users["ben"], task), speedup=1.2, extra=STAFF_ONLY)
    assert Submission.objects.get(pk=ann.pk).report["isolation"] == STAFF_ONLY["isolation"]  # stored
    with pytest.raises(NotReady):
        list(competition_export_lines(competition=race))
    with pytest.raises(CommandError, match="not frozen yet"):
        call_command("export", competition="spring-race")
    with pytest.raises(CommandError, match="no competition 'nope'; known: spring-race"):
        call_command("export", competition="nope")
    at(4)
    opencode.submission_withhold(submission=ben, actor=staff, reason="withheld")
    out = tmp_path / "race.jsonl"
    call_command("export", competition="spring-race", output=str(out))  # freezes first
    services.submission_disqualify(submission=ann, actor=staff, reason="forged timing")
    race.refresh_from_db()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(x["user"], x["rank"]) for x in lines] == [("ann", 1), ("ben", 2)]
    first = lines[0]
    assert (first["competition"], first["task"], first["device"], first["verdict"]) == ("spring-race", "softmax", "cpu", "verified")
    assert first["speedup_vs_compile"] == 1.5 and first["shapes"][0]["candidate_ms"] == 0.15
    assert first["report"]["verdict"] == "verified" and first["source"] == ann.source
    assert first["report"]["logs"] == "runner output"
    assert first["report"]["kernels_launched"] == ["_softmax_kernel"]  # open code: what it launched too
    assert set(first["report"]) == PUBLIC_REPORT | {"logs", "kernels_launched"}
    assert set(first["report"]["shapes"][0]) == {"shape", "candidate_ms", "eager_ms", "compile_ms", "floor_ms",
                                                 "speedup_vs_compile", "speedup_vs_eager"}
    assert lines[1]["source"] is None  # withheld: neither the code nor what it launched or logged
    assert set(lines[1]["report"]) == PUBLIC_REPORT
    assert "isolation" not in out.read_text() and "memcheck" not in out.read_text()

    after = [json.loads(line) for line in competition_export_lines(competition=race)]
    assert [(x["user"], x["rank"], x["rank_at_freeze"]) for x in after] == [("ann", None, 1), ("ben", 1, 2)]
    assert after[0]["verdict"] == "rejected" and after[0]["disqualified"]["reason"] == "forged timing"
    assert after[0]["source"] is None


def test_what_decided_frozen_standings_cannot_change(task, race, staff, at):
    at(4)
    competitions.competitions_freeze_due()
    race.refresh_from_db()
    race.closes_at = CLOSES + timedelta(days=1)
    with pytest.raises(ValidationError, match="frozen: its closes_at"):
        competitions.competition_save(competition=race, tasks=[task], actor=staff)
    race.refresh_from_db()
    race.title = "Spring race 2030"
    competitions.competition_save(competition=race, tasks=[task], actor=staff)
    assert Competition.objects.get(pk=race.pk).title == "Spring race 2030"


def test_bad_competitions_are_refused_field_by_field(task, staff, at):
    bad = Competition(slug="x", title=" ", device_types=[], opens_at=OPENS, closes_at=OPENS)
    with pytest.raises(ValidationError) as info:
        competitions.competition_save(competition=bad, tasks=[], actor=staff)
    errors = info.value.message_dict
    assert set(errors) == {"title", "tasks", "device_types", "closes_at"}
    assert not Competition.objects.exists()
