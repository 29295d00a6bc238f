"""The JSON API: token auth, submit, status and result (everything for the owner and staff, the
public part of a public submission for anyone), leaderboards, errors."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from leaderboard import services
from leaderboard.models import ApiToken, Submission
from site_helpers import H200, SOURCE, make_done, make_queued, queued_task_ids

pytestmark = pytest.mark.django_db


def auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


@pytest.fixture
def owner_key(owner):
    return services.api_token_create(user=owner, name="laptop")[1]


@pytest.fixture
def other_key(other):
    return services.api_token_create(user=other)[1]


@pytest.fixture
def staff_key(staff):
    return services.api_token_create(user=staff)[1]


def test_tokens_are_stored_hashed_and_record_use(owner, owner_key, client, task):
    token = ApiToken.objects.get()
    assert owner_key not in (token.key_hash, token.prefix) and len(token.key_hash) == 64
    assert token.prefix == owner_key[:8] and token.last_used_at is None
    assert client.get("/api/submissions/1", **auth(owner_key)).status_code == 404
    token.refresh_from_db()
    assert token.last_used_at is not None


@pytest.mark.parametrize("header", [None, "Token", "Bearer abc", "Token not-a-real-key"])
def test_it_refuses_missing_or_bad_tokens(client, task, header, owner_key):
    extra = {"HTTP_AUTHORIZATION": header} if header is not None else {}
    resp = client.post("/api/submissions", {"task": "softmax", "source": SOURCE}, content_type="application/json",
                       **extra)
    assert resp.status_code == 401
    assert resp["WWW-Authenticate"].startswith("Token")
    assert "Token" in resp.json()["error"] or "token" in resp.json()["error"]
    assert not Submission.objects.exists()


def test_a_token_of_a_deactivated_user_is_refused(client, owner, owner_key, task):
    owner.is_active = False
    owner.save()
    assert client.get("/api/submissions/1", **auth(owner_key)).status_code == 401


def test_submit_json_then_read_the_result(client, task, owner, owner_key, eval_queue, redis_client,
                                          django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post("/api/submissions", {"task": "softmax", "mode": "test", "source": SOURCE,
                                                "filename": "mine.py"},
                           content_type="application/json", **auth(owner_key))
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["status"] == "queued" and body["mode"] == "test" and body["finished"] is False
    sub = Submission.objects.get(pk=body["id"])
    assert sub.user == owner and sub.filename == "mine.py"
    assert queued_task_ids(redis_client, eval_queue) == [sub.celery_task_id]
    assert body["url"].endswith(f"/api/submissions/{sub.pk}")
    status = client.get(f"/api/submissions/{sub.pk}", **auth(owner_key)).json()
    assert status["status"] == "queued" and "verdict" not in status


def test_submit_a_file_upload(client, task, owner_key, eval_queue):
    upload = SimpleUploadedFile("k.py", SOURCE.encode(), content_type="text/x-python")
    resp = client.post("/api/submissions", {"task": "softmax", "file": upload}, **auth(owner_key))
    assert resp.status_code == 201, resp.content
    assert Submission.objects.get().filename == "k.py" and resp.json()["mode"] == "ranked"


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"source": SOURCE}, 400, "'task' is required"),
        ({"task": "softmax"}, 400, "Send the kernel as 'source'"),
        ({"task": "nope", "source": SOURCE}, 404, "Unknown task 'nope'"),
        ({"task": "softmax", "source": SOURCE, "mode": "fast"}, 400, "Unknown mode"),
        ({"task": "softmax", "source": "def f(): pass\n"}, 400, "custom_kernel"),
        ({"task": "softmax", "source": SOURCE, "filename": "k.txt"}, 400, ".py"),
        ({"task": "softmax", "source": 12}, 400, "'source' must be a string"),
    ],
)
def test_submit_errors_are_json_with_clear_messages(client, task, owner_key, eval_queue, body, status, message):
    resp = client.post("/api/submissions", body, content_type="application/json", **auth(owner_key))
    assert resp.status_code == status
    assert message in resp.json()["error"]


def test_a_file_for_another_task_is_refused_with_the_parameters_it_needs(client, task, owner_key, eval_queue):
    from evaluator.tasks import get_task

    services.task_sync(spec=get_task("layernorm"))
    body = {"task": "layernorm", "source": SOURCE, "filename": "softmax.py"}
    resp = client.post("/api/submissions", body, content_type="application/json", **auth(owner_key))
    assert resp.status_code == 400
    assert resp.json()["error"] == ("custom_kernel takes (x, weight, bias) for layernorm; this file's takes (x): "
                                    "choose the task it was written for.")
    assert not Submission.objects.exists()
    # *args takes whatever the task passes
    body["source"] = "def custom_kernel(*inputs):\n    return inputs[0]\n"
    resp = client.post("/api/submissions", body, content_type="application/json", **auth(owner_key))
    assert resp.status_code == 201, resp.content

def test_a_queued_submissions_phase_says_its_place_in_line_and_the_typical_duration(client, task, owner, other,
                                                                                   staff, owner_key):
    from datetime import timedelta

    from django.utils import timezone

    first, second = make_queued(task, other), make_queued(task, staff)  # both ahead: uploaded earlier
    mine = make_queued(task, owner)
    end = timezone.now()
    for seconds in (50, 60, 90):  # verified ranked runs of softmax on the H200
        done = make_done(task, staff)
        Submission.objects.filter(pk=done.pk).update(started_at=end - timedelta(seconds=seconds), finished_at=end)
    Submission.objects.filter(pk__in=[first.pk, second.pk]).update(created_at=timezone.now() - timedelta(minutes=5))
    body = client.get(f"/api/submissions/{mine.pk}", **auth(owner_key)).json()
    # staff's runs started just now, so staff's upload waits behind the owner's: the fair order
    assert (body["status"], body["phase"], body["queue_position"]) == ("queued", "queued, 2nd in line", 2)
    assert body["typical_s"] == 60 and body["elapsed_s"] >= 0
    services.submission_claim(submission_id=first.pk, worker="w")
    body = client.get(f"/api/submissions/{mine.pk}", **auth(owner_key)).json()
    assert (body["phase"], body["queue_position"]) == ("queued, 1st in line", 1)
    claimed = services.submission_claim(submission_id=mine.pk, worker="w")
    services.submission_set_phase(submission=claimed, phase="correctness: test shape 2 of 6")
    body = client.get(f"/api/submissions/{mine.pk}", **auth(owner_key)).json()
    assert (body["status"], body["phase"], body["queue_position"]) == ("running", "correctness: test shape 2 of 6",
                                                                        None)
    assert body["typical_s"] == 60 and 0 <= body["elapsed_s"] < 30

def test_malformed_json_is_a_400(client, task, owner_key):
    resp = client.post("/api/submissions", "{not json", content_type="application/json", **auth(owner_key))
    assert resp.status_code == 400 and resp.json()["error"] == "The body is not valid JSON."


def test_the_rate_limit_applies_with_retry_after(client, task, owner_key, settings, eval_queue):
    settings.UPLOAD_RATE_LIMIT_PER_HOUR = 1
    body = {"task": "softmax", "source": SOURCE}
    assert client.post("/api/submissions", body, content_type="application/json", **auth(owner_key)).status_code == 201
    resp = client.post("/api/submissions", body, content_type="application/json", **auth(owner_key))
    assert resp.status_code == 429 and "1 submissions per hour" in resp.json()["error"]
    assert 0 < int(resp["Retry-After"]) <= 3600


def test_a_banned_user_gets_403(client, task, owner, owner_key, staff, eval_queue):
    services.user_ban(user=owner, actor=staff, reason="x")
    resp = client.post("/api/submissions", {"task": "softmax", "source": SOURCE}, content_type="application/json",
                       **auth(owner_key))
    assert resp.status_code == 403 and "banned" in resp.json()["error"]


def test_the_owner_and_staff_read_any_submission_others_the_public_part_of_public_ones(
        client, task, owner, owner_key, other_key, staff_key):
    sub = make_done(task, owner)
    mine = client.get(f"/api/submissions/{sub.pk}", **auth(owner_key))
    assert mine.status_code == 200
    body = mine.json()
    assert body["verdict"] == "verified" and body["ranked"] is True
    assert body["speedup_vs_compile"] == pytest.approx(1.2) and body["gpu_name"] == "NVIDIA H200"
    assert body["shapes"][0]["pct_of_floor"] > 0 and body["tests"][0]["passed"] is True
    assert body["logs"] == "runner output" and body["report"] and body["code_open"] is False
    assert client.get(body["source"], **auth(owner_key)).json()["source"] == SOURCE
    # a ranked entry is public, as its page is: its result, not its code, logs or stored report
    theirs = client.get(f"/api/submissions/{sub.pk}", **auth(other_key)).json()
    assert theirs["verdict"] == "verified" and theirs["shapes"] == body["shapes"]
    assert theirs["source"] is None and theirs["code_open"] is False
    assert not {"logs", "report", "attempts"} & set(theirs)
    resp = client.get(body["source"], **auth(other_key))
    assert resp.status_code == 403 and "owner's and staff's" in resp.json()["error"]
    tryout = make_done(task, owner, mode="test")  # a test run is the owner's and staff's
    resp = client.get(f"/api/submissions/{tryout.pk}", **auth(other_key))
    assert resp.status_code == 404 and "another user" not in resp.json()["error"]  # as if it were not there
    assert client.get(f"/api/submissions/{tryout.pk}/source", **auth(other_key)).status_code == 404
    assert client.get(f"/api/submissions/{tryout.pk}/source", **auth(staff_key)).json()["source"] == SOURCE
    assert client.get(f"/api/submissions/{sub.pk + 1000}", **auth(owner_key)).status_code == 404


def test_the_leaderboard_is_public_json(client, task, owner, other):
    best = make_done(task, owner, speedup=1.3)
    make_done(task, other, speedup=1.1)
    make_done(task, other, device_type="cpu", speedup=2.0)
    resp = client.get(f"/api/tasks/softmax/leaderboard?device={H200}")
    assert resp.status_code == 200
    body = resp.json()
    assert body["device_type"] == H200 and {"cpu", H200} <= set(body["device_types"])
    assert [(e["rank"], e["user"]) for e in body["entries"]] == [(1, "owner"), (2, "other")]
    assert body["entries"][0]["submission"] == best.pk
    cpu = client.get("/api/tasks/softmax/leaderboard?device=cpu").json()
    assert [e["user"] for e in cpu["entries"]] == ["other"]
    assert client.get("/api/tasks/nope/leaderboard").status_code == 404
    tasks = client.get("/api/tasks").json()["tasks"]
    assert tasks[0]["name"] == "softmax" and tasks[0]["submissions"] == 3


def test_wrong_methods_are_refused(client, owner_key, task):
    assert client.delete("/api/submissions", **auth(owner_key)).status_code == 405
    assert client.post("/api/tasks/softmax/leaderboard").status_code == 405


def test_the_token_command_prints_a_working_key(client, owner, task, capsys):
    call_command("create_api_token", "owner", "--name", "ci")
    key = capsys.readouterr().out.strip()
    assert client.get("/api/submissions/1", **auth(key)).status_code == 404  # authenticated, no such id
    assert ApiToken.objects.get().name == "ci"
