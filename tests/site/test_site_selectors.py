"""Selectors: who ranks, one leaderboard per device type, and who may see a submission."""
import pytest
from django.contrib.auth import get_user_model

from leaderboard import selectors, services
from site_helpers import H200, make_done, make_queued

pytestmark = pytest.mark.django_db


def test_the_leaderboard_shows_the_best_verified_submission_per_user(task, owner, other):
    make_done(task, owner, speedup=1.1)
    best = make_done(task, owner, speedup=1.3)
    make_done(task, owner, speedup=1.2)
    theirs = make_done(task, other, speedup=1.25)
    board = selectors.leaderboard_for_task(task=task, device_type=H200)
    assert [(e.pk, e.rank) for e in board] == [(best.pk, 1), (theirs.pk, 2)]


def test_ties_go_to_the_earlier_submission(task, owner, other):
    first = make_done(task, other, speedup=1.2)
    make_done(task, owner, speedup=1.2)
    assert selectors.leaderboard_for_task(task=task, device_type=H200)[0].pk == first.pk


def test_only_ranked_verified_visible_results_rank(task, owner, other, staff):
    make_done(task, owner, mode="test")
    make_done(task, owner, verdict="flagged", codes=("too_fast_vs_compile",), speedup=3.0)
    make_done(task, owner, verdict="rejected", codes=("mismatch",))
    make_queued(task, owner)
    hidden = make_done(task, other, speedup=1.4)
    services.submission_disqualify(submission=hidden, actor=staff, reason="copied")
    assert selectors.leaderboard_for_task(task=task, device_type=H200) == []


def test_a_flagged_result_ranks_once_approved(task, owner, staff):
    flagged = make_done(task, owner, verdict="flagged", codes=("too_fast_vs_compile",), speedup=1.8)
    assert [s.pk for s in selectors.flagged_queue()] == [flagged.pk]
    services.submission_approve(submission=flagged, actor=staff, reason="checked the code")
    assert [e.pk for e in selectors.leaderboard_for_task(task=task, device_type=H200)] == [flagged.pk]
    assert list(selectors.flagged_queue()) == []


def test_banned_users_are_hidden_without_deleting_anything(task, owner, other, staff):
    mine = make_done(task, owner, speedup=1.5)
    theirs = make_done(task, other, speedup=1.1)
    services.user_ban(user=owner, actor=staff, reason="sock puppets")
    assert [e.pk for e in selectors.leaderboard_for_task(task=task, device_type=H200)] == [theirs.pk]
    assert selectors.task_list_with_stats().get(pk=task.pk).best_speedup == pytest.approx(1.1)
    mine.refresh_from_db()  # still there
    services.user_unban(user=owner, actor=staff, reason="appeal accepted")
    assert [e.pk for e in selectors.leaderboard_for_task(task=task, device_type=H200)] == [mine.pk, theirs.pk]


def test_one_leaderboard_per_device_type(task, owner, other):
    gpu = make_done(task, owner, speedup=1.1)
    cpu = make_done(task, other, device_type="cpu", speedup=4.0)
    assert [e.pk for e in selectors.leaderboard_for_task(task=task, device_type=H200)] == [gpu.pk]
    assert [e.pk for e in selectors.leaderboard_for_task(task=task, device_type="cpu")] == [cpu.pk]
    assert selectors.leaderboard_for_task(task=task, device_type="cuda:NVIDIA B200") == []
    assert {"cpu", H200} <= set(selectors.device_types_for_task(task=task))


def test_task_list_counts_submissions_and_best_speedup(task, owner, other):
    make_done(task, owner, speedup=1.3)
    make_done(task, other, verdict="flagged", codes=("below_floor",), speedup=9.0)
    make_queued(task, other)
    row = selectors.task_list_with_stats().get(pk=task.pk)
    assert row.submission_count == 3 and row.best_speedup == pytest.approx(1.3)


def test_history_is_oldest_first(task, owner, other):
    a = make_done(task, owner, speedup=1.1)
    b = make_done(task, other, speedup=1.2)
    rows = selectors.submission_history_for_task(task=task, device_type=H200)
    assert [r["pk"] for r in rows] == [a.pk, b.pk]
    assert rows[1]["user__username"] == "other"


def test_the_owner_and_staff_see_a_submission_others_only_a_public_one(task, owner, other, staff):
    from django.contrib.auth.models import AnonymousUser

    from leaderboard import services

    sub = make_done(task, owner, mode="test")
    anonymous = get_user_model()()  # unsaved: behaves like no login for can_view
    assert selectors.submission_for_viewer(submission_id=sub.pk, user=owner) == sub
    assert selectors.submission_for_viewer(submission_id=sub.pk, user=staff) == sub
    assert selectors.submission_for_viewer(submission_id=sub.pk, user=other) is None
    assert selectors.submission_for_viewer(submission_id=sub.pk, user=AnonymousUser()) is None
    assert not sub.can_view(anonymous)
    assert list(selectors.submissions_for_user(user=owner)) == [sub]
    assert list(selectors.submissions_for_user(user=other)) == []
    # an entry that ranks is public, its code is not; published code is
    ranked = make_done(task, owner)
    assert selectors.submission_for_viewer(submission_id=ranked.pk, user=AnonymousUser()) == ranked
    assert not selectors.code_visible(submission=ranked, user=other)
    services.user_ban(user=owner, actor=staff, reason="x")
    assert selectors.submission_for_viewer(submission_id=ranked.pk, user=other) is None  # off the board
    ranked = services.submission_publish(submission=ranked, actor=owner)
    assert selectors.code_visible(submission=ranked, user=AnonymousUser())
    assert selectors.submission_for_viewer(submission_id=ranked.pk, user=other) == ranked


def test_shape_rows_give_the_percent_of_the_floor(task, owner):
    sub = make_done(task, owner, candidate_ms=0.2)
    (row,) = selectors.shape_rows(submission=sub)
    floor = 2 * 8192 * 8192 * 4 / 4.27e12 * 1e3
    assert row["floor_ms"] == pytest.approx(floor)
    assert row["pct_of_floor"] == pytest.approx(floor / 0.2 * 100)


def test_shape_rows_say_how_widely_the_timed_calls_spread(task, owner):
    sub = make_done(task, owner, candidate_ms=0.2)
    assert selectors.shape_rows(submission=sub)[0]["band_pct"] is None  # an older report
    row = sub.report["shapes"][0]
    row.update(candidate_p10_ms=0.19, candidate_p90_ms=0.21,
               eager_p10_ms=row["eager_ms"] * 0.95, eager_p90_ms=row["eager_ms"] * 1.05,
               compile_p10_ms=row["compile_ms"] * 0.9, compile_p90_ms=row["compile_ms"] * 1.1)
    sub.save()
    (quiet,) = selectors.shape_rows(submission=sub)
    assert quiet["band_pct"] == pytest.approx(20.0) and not quiet["noisy"]
    row["compile_p90_ms"] = row["compile_ms"] * 1.3  # a slow tail on one side
    sub.save()
    (noisy,) = selectors.shape_rows(submission=sub)
    assert noisy["band_pct"] == pytest.approx(40.0) and noisy["noisy"]
