"""The boards' read model (models.BoardEntry, kept by leaderboard/services/boards.py): after each
kind of write that can change a board it equals a rebuild from the submissions, and the boards
read it."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from leaderboard import selectors, services
from leaderboard.models import BoardEntry, Submission
from leaderboard.services import boards, results_file
from site_helpers import H200, make_done, make_queued, report_for

pytestmark = pytest.mark.django_db


def assert_as_rebuilt() -> set:
    kept, built = boards.board_entries_kept(), boards.board_entries_built()
    assert kept == built, f"kept but not built: {kept - built}; built but not kept: {built - kept}"
    return kept


def board_users(task, device_type=H200) -> list[str]:
    return [e.user.username for e in selectors.leaderboard_for_task(task=task, device_type=device_type)]


def test_each_kind_of_write_leaves_the_read_model_as_a_rebuild(task, owner, other, admin_user):
    # results arrive: a first, a better and a worse one of the same user, another user's, a test
    # run and a CPU try-out (boards of their own or none)
    first = make_done(task, owner, speedup=1.2)
    assert assert_as_rebuilt() == {(task.pk, H200, owner.pk, first.pk)}
    better = make_done(task, owner, speedup=1.5)
    worse = make_done(task, owner, speedup=1.1)
    theirs = make_done(task, other, speedup=1.3)
    make_done(task, other, mode="test", speedup=9.0)
    cpu = make_done(task, other, device_type="cpu", speedup=1.1)
    kept = assert_as_rebuilt()
    assert (task.pk, H200, owner.pk, better.pk) in kept and (task.pk, "cpu", other.pk, cpu.pk) in kept
    assert board_users(task) == ["owner", "other"]

    # a flagged result counts once approved
    flagged = make_done(task, other, speedup=2.0, verdict="flagged", codes=("too_fast_vs_compile",))
    assert (task.pk, H200, other.pk, theirs.pk) in assert_as_rebuilt()
    services.submission_approve(submission=flagged, actor=admin_user)
    assert (task.pk, H200, other.pk, flagged.pk) in assert_as_rebuilt()
    assert board_users(task) == ["other", "owner"]

    # a disqualification falls back to the user's next best
    services.submission_disqualify(submission=better, actor=admin_user, reason="cheats")
    assert (task.pk, H200, owner.pk, first.pk) in assert_as_rebuilt()

    # a re-run takes the result off until it is stored again
    services.submission_rerun(submission=first, actor=admin_user)
    assert (task.pk, H200, owner.pk, worse.pk) in assert_as_rebuilt()

    # a ban takes every entry of the user off, an unban puts them back
    services.user_ban(user=other, actor=admin_user, reason="spam")
    assert {e[2] for e in assert_as_rebuilt()} == {owner.pk}
    assert board_users(task) == ["owner"]
    services.user_unban(user=other, actor=admin_user)
    assert {e[2] for e in assert_as_rebuilt()} == {owner.pk, other.pk}

    # a calibration rescores the ties: a result within the band stands level with torch.compile
    services.task_record_calibration(rows=[{"task": task.name, "reference_vs_eager": 1.0, "compile_vs_compile": 1.2,
                                            "errors": []}], device_type=H200, source="test")
    assert_as_rebuilt()

    # a queued upload and a failure change nothing; a stored result of a queued "cuda" upload
    # lands on its GPU's board
    queued = make_queued(task, owner, device_type="cuda")
    claimed = services.submission_claim(submission_id=queued.pk, worker="test")
    services.submission_fail(submission=claimed, error="box")
    assert_as_rebuilt()
    queued = make_queued(task, owner, device_type="cuda")
    claimed = services.submission_claim(submission_id=queued.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report_for(task, speedup=5.0))
    assert (task.pk, H200, owner.pk, queued.pk) in assert_as_rebuilt()
    assert board_users(task)[0] == "owner"


def test_an_imported_results_file_lands_on_the_boards(task, owner, other, django_user_model):
    make_done(task, owner, speedup=1.4)
    make_done(task, other, speedup=1.2)
    exported = results_file.export()
    Submission.objects.all().delete()
    assert BoardEntry.objects.count() == 0  # they went with their submissions
    results_file.load(exported)
    assert len(assert_as_rebuilt()) == 2
    assert board_users(task) == ["owner", "other"]


def test_the_board_reads_the_read_model_and_the_command_rebuilds_it(task, owner, other):
    make_done(task, owner, speedup=1.4)
    make_done(task, other, speedup=1.2)
    BoardEntry.objects.filter(user=other).delete()  # a row lost past the services
    assert board_users(task) == ["owner"]
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("rebuild_boards", "--check", stdout=out)
    assert "1 differ" in out.getvalue()
    call_command("rebuild_boards", stdout=io.StringIO())
    assert_as_rebuilt()
    assert board_users(task) == ["owner", "other"]
    call_command("rebuild_boards", "--check", stdout=io.StringIO())  # no exit: they agree
