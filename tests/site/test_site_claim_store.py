"""The claim (conditional update) and storing a result: running twice does nothing twice."""
import pytest

from leaderboard import services
from leaderboard.models import Submission
from site_helpers import H200, make_queued, report_for

pytestmark = pytest.mark.django_db


def test_only_one_claim_wins(task, owner):
    sub = make_queued(task, owner)
    first = services.submission_claim(submission_id=sub.pk, worker="w1")
    second = services.submission_claim(submission_id=sub.pk, worker="w2")
    assert first is not None and second is None
    sub.refresh_from_db()
    assert (sub.status, sub.phase, sub.worker, sub.attempts) == ("running", "starting sandbox", "w1", 1)
    assert sub.started_at and sub.heartbeat_at and sub.claim_token == first.claim_token


def test_a_finished_submission_cannot_be_claimed(task, owner):
    sub = make_queued(task, owner)
    claimed = services.submission_claim(submission_id=sub.pk)
    assert services.submission_store_result(submission=claimed, report=report_for(task))
    assert services.submission_claim(submission_id=sub.pk) is None
    assert services.submission_claim(submission_id=999_999) is None


def test_a_result_is_stored_once(task, owner):
    sub = make_queued(task, owner)
    claimed = services.submission_claim(submission_id=sub.pk)
    assert services.submission_store_result(submission=claimed, report=report_for(task)) is True
    assert services.submission_store_result(submission=claimed, report=report_for(task, speedup=9.0)) is False
    sub.refresh_from_db()
    assert sub.results_stored == 1 and sub.speedup_vs_compile == pytest.approx(1.2)


def test_a_stale_claim_stores_nothing(task, owner):
    """A worker whose submission was re-queued and claimed by another must not overwrite it."""
    sub = make_queued(task, owner)
    old = services.submission_claim(submission_id=sub.pk, worker="old")
    Submission.objects.filter(pk=sub.pk).update(status="queued", claim_token="")
    new = services.submission_claim(submission_id=sub.pk, worker="new")
    assert services.submission_set_phase(submission=old, phase="evaluating") is False
    assert services.submission_store_result(submission=old, report=report_for(task, speedup=5.0)) is False
    assert services.submission_store_result(submission=new, report=report_for(task)) is True
    sub.refresh_from_db()
    assert sub.speedup_vs_compile == pytest.approx(1.2) and sub.attempts == 2


def test_it_stores_what_the_pages_show(task, owner):
    sub = make_queued(task, owner, device_type="cpu")
    claimed = services.submission_claim(submission_id=sub.pk)
    services.submission_set_phase(submission=claimed, phase="evaluating")
    assert Submission.objects.get(pk=sub.pk).phase == "evaluating"
    services.submission_store_result(submission=claimed, report=report_for(task, device="cuda"),
                                     logs="judge output")
    sub.refresh_from_db()
    assert sub.status == "done" and sub.phase == "" and sub.finished_at
    assert sub.verdict == "verified" and sub.is_ranked
    # the device type follows what the evaluation really ran on
    assert sub.device_type == H200 and sub.gpu_name == "NVIDIA H200"
    assert sub.versions["torch"] == "2.11.0"
    assert sub.speedup_vs_eager == pytest.approx(2.4)
    # floor / candidate median * 100, with the published H200 floor for 8192x8192 fp32 softmax
    floor = 2 * 8192 * 8192 * 4 / 4.27e12 * 1e3
    assert sub.pct_of_floor == pytest.approx(floor / 0.15 * 100)
    assert "runner output" in sub.logs and "judge output" in sub.logs
    assert sub.report["kernels_launched"] == ["_softmax_kernel"]


def test_test_mode_and_rejected_results_have_no_speedups(task, owner):
    for mode, verdict, codes in (("test", "verified", ()), ("ranked", "rejected", ("mismatch",))):
        sub = make_queued(task, owner, mode=mode)
        claimed = services.submission_claim(submission_id=sub.pk)
        services.submission_store_result(submission=claimed, report=report_for(task, mode=mode, verdict=verdict,
                                                                               codes=codes))
        sub.refresh_from_db()
        assert sub.status == "done" and sub.verdict == verdict and not sub.is_ranked
        assert sub.speedup_vs_compile is None and sub.pct_of_floor is None


def test_a_flagged_result_keeps_its_reasons(task, owner):
    sub = make_queued(task, owner)
    claimed = services.submission_claim(submission_id=sub.pk)
    services.submission_store_result(submission=claimed, report=report_for(task, verdict="flagged",
                                                                           codes=("too_fast_vs_compile",)))
    sub.refresh_from_db()
    assert sub.verdict == "flagged" and not sub.is_ranked
    assert sub.reason_codes == ["too_fast_vs_compile"] and sub.reasons == ["reason for too_fast_vs_compile"]


def test_an_invalid_report_fails_the_submission(task, owner):
    sub = make_queued(task, owner)
    claimed = services.submission_claim(submission_id=sub.pk)
    forged = report_for(task)
    forged["verdict"] = "verified"
    forged["reason_codes"] = ["mismatch"]
    forged["reasons"] = ["wrong"]
    services.submission_store_result(submission=claimed, report=forged)
    sub.refresh_from_db()
    assert sub.status == "failed" and "invalid" in sub.error and sub.verdict == ""


def test_a_report_for_another_task_fails_the_submission(task, owner):
    sub = make_queued(task, owner)
    claimed = services.submission_claim(submission_id=sub.pk)
    report = report_for(task)
    report["mode"] = "test"
    report["speedup_vs_compile"] = report["speedup_vs_eager"] = None
    services.submission_store_result(submission=claimed, report=report)
    sub.refresh_from_db()
    assert sub.status == "failed" and "another evaluation" in sub.error and "not your code" in sub.error
    assert "not softmax/ranked" in sub.error_detail and sub.error_at


def test_logs_are_capped_at_64_kib(task, owner):
    sub = make_queued(task, owner)
    claimed = services.submission_claim(submission_id=sub.pk)
    services.submission_store_result(submission=claimed, report=report_for(task, logs="x" * 60_000),
                                     logs="y" * 60_000)
    sub.refresh_from_db()
    assert len(sub.logs) == 64 * 1024 and sub.logs.endswith("y")
