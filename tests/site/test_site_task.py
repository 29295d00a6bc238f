"""evaluate_submission in process, through the real sandbox: it stores a result once, a second run
does nothing, and an infrastructure failure is retried with backoff then marked failed."""
import pytest

from leaderboard.models import Submission
from leaderboard.tasks import evaluate_submission
from site_helpers import make_queued


def test_time_limits_sit_above_the_sandbox_limit(settings):
    assert settings.EVAL_SOFT_LIMIT_S > settings.SANDBOX_TIME_LIMIT_S
    assert settings.EVAL_HARD_LIMIT_S == int(settings.EVAL_SOFT_LIMIT_S * 1.2)
    assert evaluate_submission.acks_late and evaluate_submission.reject_on_worker_lost
    assert evaluate_submission.soft_time_limit == settings.EVAL_SOFT_LIMIT_S
    assert evaluate_submission.time_limit == settings.EVAL_HARD_LIMIT_S
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1


def test_services_send_the_task_by_its_registered_name():
    from leaderboard.routing import EVALUATE_TASK

    assert evaluate_submission.name == EVALUATE_TASK


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_evaluates_once_and_a_second_run_does_nothing(task, owner, require_sandbox, monkeypatch):
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    sub = make_queued(task, owner, mode="test", device_type="cpu")
    assert evaluate_submission.apply(args=[sub.pk]).get() == "stored"
    sub.refresh_from_db()
    assert sub.status == "done" and sub.results_stored == 1 and sub.attempts == 1
    assert sub.report["task"] == "softmax" and sub.report["mode"] == "test" and sub.verdict
    assert sub.versions.get("torch") or sub.verdict == "rejected"
    assert evaluate_submission.apply(args=[sub.pk]).get() == "skipped"
    sub.refresh_from_db()
    assert sub.results_stored == 1 and sub.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_a_sandbox_failure_is_retried_then_failed(task, owner, settings):
    # a sandbox backend that does not exist: sandbox.evaluate raises SandboxError (infrastructure)
    settings.SANDBOX_BACKEND = "no-such-backend"
    settings.EVAL_MAX_ATTEMPTS = 3
    sub = make_queued(task, owner, device_type="cpu")
    # eager apply runs each retry in turn, ignoring the countdown
    evaluate_submission.apply(args=[sub.pk])
    sub.refresh_from_db()
    assert sub.status == "failed" and sub.attempts == 3 and sub.results_stored == 0
    assert sub.error.startswith("The evaluation could not run") and "Gave up after 3 attempts" in sub.error
    assert "unknown sandbox backend 'no-such-backend'" in sub.error_detail and sub.error_at


@pytest.mark.django_db(transaction=True)
def test_a_submission_that_is_not_queued_is_skipped(task, owner):
    sub = make_queued(task, owner, device_type="cpu")
    Submission.objects.filter(pk=sub.pk).update(status="running", claim_token="someone")
    assert evaluate_submission.apply(args=[sub.pk]).get() == "skipped"
    assert evaluate_submission.apply(args=[999_999]).get() == "skipped"


@pytest.mark.django_db(transaction=True)
def test_an_added_tasks_definition_goes_into_the_box_of_its_evaluations(task, owner, monkeypatch):
    """The worker hands the box the task's stored files (sandbox.evaluate's task_files, read-only at
    /tasks there), and a built-in task's none; the real box's side is in test_site_task_catalog.py."""
    import sandbox

    from leaderboard.models import Task

    seen = []

    def evaluate(**kwargs):
        seen.append(kwargs)
        raise sandbox.SandboxError("stop here")

    monkeypatch.setattr(sandbox, "evaluate", evaluate)
    added = Task.objects.create(name="6_masked_scale", title="Masked scale", track="kernelbench-level1",
                                format="kernelbench", definition={"level1/6_Masked-Scale.py": "class Model: ...\n"})
    for t in (added, task):
        evaluate_submission.apply(args=[make_queued(t, owner, mode="test", device_type="cpu").pk])
    assert seen[0]["task"] == "6_masked_scale"
    assert seen[0]["task_files"] == {"level1/6_Masked-Scale.py": b"class Model: ...\n"}
    assert [s["task_files"] for s in seen if s["task"] == "softmax"][0] is None
