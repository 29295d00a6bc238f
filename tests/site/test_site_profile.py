"""Profile mode on the site: its own limit (django-ratelimit in Redis, per account), the API's view
of a profile and its .ncu-rep, and the whole CPU path: the CLI submits through the API, the real
evaluate_submission task runs the real sandbox, the CLI prints the profile and the page shows it."""
import subprocess
import sys
import time

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from leaderboard import services
from leaderboard.models import ProfileFile, Submission
from leaderboard.services import profiling
from leaderboard.tasks import evaluate_submission
from site_helpers import SOURCE, report_for

pytestmark = pytest.mark.django_db(transaction=True)


def auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


def create(user, mode="profile"):
    return services.submission_create(user=user, task="softmax", source=SOURCE, filename="k.py", mode=mode)


def test_profiles_have_their_own_limit_per_account(task, owner, other, settings, eval_queue):
    settings.PROFILES_PER_USER = "2/h"
    settings.EVAL_MAX_ACTIVE_PER_USER = 10
    create(owner)
    create(owner)
    with pytest.raises(services.RateLimited) as refused:
        create(owner)
    assert refused.value.code == "rate_limited"
    assert "Profile limit reached: 2 profile runs per hour" in refused.value.messages[0]
    assert 0 < refused.value.params["retry_after_s"] <= 3600
    create(owner, mode="test")  # the other modes are not counted against it
    create(other)  # nor is anyone else
    assert Submission.objects.filter(user=owner, mode="profile").count() == 2


def test_without_its_counters_no_profile_is_accepted(task, owner, settings, eval_queue):
    settings.CACHES = {**settings.CACHES, "throttle": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:9/0",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
    with pytest.raises(services.RateLimited, match="cannot be counted right now"):
        create(owner)
    create(owner, mode="test")


def test_an_unknown_mode_names_the_three(task, owner):
    with pytest.raises(ValidationError, match="'test', 'ranked', 'profile'"):
        create(owner, mode="fast")


def test_the_api_takes_profile_mode_and_answers_429_past_the_limit(client, task, owner, settings, eval_queue):
    settings.PROFILES_PER_USER = "1/h"
    key = services.api_token_create(user=owner)[1]
    body = {"task": "softmax", "mode": "profile", "source": SOURCE}
    first = client.post("/api/submissions", body, content_type="application/json", **auth(key))
    assert first.status_code == 201 and first.json()["mode"] == "profile"
    second = client.post("/api/submissions", body, content_type="application/json", **auth(key))
    assert second.status_code == 429 and "Profile limit reached" in second.json()["error"]
    assert 0 < int(second["Retry-After"]) <= 3600


def _stored_profile(task, owner, data: bytes | None):
    report = report_for(task, mode="profile", device="cuda")
    report["profile"] = {"tool": "ncu", "shape": {"M": 8192, "N": 8192}, "file_bytes": len(data or b""),
                         "kernels": [{"id": 0, "name": "_softmax_rows", "sections": []}]}
    sub = Submission.objects.create(user=owner, task=task, mode="profile", device_type="cuda:NVIDIA H200",
                                    source=SOURCE, celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report)
    profiling.profile_file_store(submission=sub, data=data)
    return sub


def test_the_api_shows_the_profile_and_hands_the_file_to_its_owner(client, task, owner, other):
    sub = _stored_profile(task, owner, b"ncu-rep bytes")
    key, other_key = services.api_token_create(user=owner)[1], services.api_token_create(user=other)[1]
    data = client.get(f"/api/submissions/{sub.pk}", **auth(key)).json()
    assert data["profile"]["tool"] == "ncu" and data["profile"]["kernels"][0]["name"] == "_softmax_rows"
    assert data["profile_file"].endswith(f"/api/submissions/{sub.pk}/profile.ncu-rep")
    got = client.get(f"/api/submissions/{sub.pk}/profile.ncu-rep", **auth(key))
    assert got.status_code == 200 and got.content == b"ncu-rep bytes"
    assert client.get(f"/api/submissions/{sub.pk}/profile.ncu-rep", **auth(other_key)).status_code == 404
    assert client.get(f"/api/submissions/{sub.pk}/profile.ncu-rep").status_code == 401
    ProfileFile.objects.all().delete()
    assert "profile_file" not in client.get(f"/api/submissions/{sub.pk}", **auth(key)).json()


@pytest.mark.slow
def test_the_cli_submits_a_profile_and_prints_it_from_the_real_sandbox(live_server, task, owner, eval_queue,
                                                                        require_sandbox, monkeypatch, client,
                                                                        tmp_path):
    """examples/softmax.py on the CPU, end to end: CLI -> API -> the worker's task -> sandbox ->
    evaluator (judge, then the profiling child) -> stored report -> CLI output and result page."""
    from pathlib import Path

    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    key = services.api_token_create(user=owner)[1]
    example = Path(__file__).resolve().parents[2] / "examples" / "softmax.py"
    proc = subprocess.Popen([sys.executable, "-m", "leaderboard.cli", "submit", str(example), "--task", "softmax",
                             "--mode", "profile", "--url", live_server.url, "--token", key, "--poll", "0.3",
                             "--profile-out", str(tmp_path / "p.ncu-rep")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not Submission.objects.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    sub = Submission.objects.get()
    assert sub.mode == "profile"
    # what a worker does with the message, run here: the real task through the real sandbox
    assert evaluate_submission.apply(args=[sub.pk]).get() == "stored"
    out, err = proc.communicate(timeout=60)
    sub.refresh_from_db()
    assert sub.verdict == "verified" and sub.speedup_vs_compile is None, (sub.reasons, sub.error)
    profile = sub.report["profile"]
    assert profile["tool"] == "torch.profiler" and profile["ncu"] is None
    assert "custom_kernel" in [op["name"] for op in profile["ops"]]
    assert proc.returncode == 0, (out, err)
    assert "verdict: Verified (profile run)" in out and "with torch.profiler" in out and "triton _softmax_rows" in out
    assert "no .ncu-rep to save" in err and not (tmp_path / "p.ncu-rep").exists()
    assert not ProfileFile.objects.exists()
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert 'id="profile-ops"' in html and "triton _softmax_rows" in html and "Self CPU" in html
