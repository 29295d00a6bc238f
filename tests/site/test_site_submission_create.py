"""submission_create: validation, the per-user rate limit, bans, and the message sent after commit."""
import pytest
from django.core.exceptions import ValidationError

from leaderboard import services
from leaderboard.models import Submission

from site_helpers import SOURCE, queued_messages, queued_task_ids

pytestmark = pytest.mark.django_db


def test_it_stores_the_row_and_enqueues_after_commit(task, owner, eval_queue, redis_client,
                                                      django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sub = services.submission_create(user=owner, task=task, source=SOURCE, filename="k.py", mode="ranked")
        # nothing is sent before the row is committed
        assert queued_task_ids(redis_client, eval_queue) == []
    for callback in callbacks:
        callback()
    sub.refresh_from_db()
    assert sub.status == "queued" and sub.attempts == 0
    assert sub.device_type == "cpu"
    assert len(sub.source_sha256) == 64
    messages = queued_messages(redis_client, eval_queue)
    assert [m["headers"]["id"] for m in messages] == [sub.celery_task_id]
    assert messages[0]["headers"]["task"] == "leaderboard.tasks.evaluate_submission"
    assert messages[0]["headers"]["argsrepr"] == f"[{sub.pk}]"


def test_it_accepts_bytes_and_a_task_name(task, owner, eval_queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sub = services.submission_create(user=owner, task="softmax", source=SOURCE.encode(), filename="dir/k.py",
                                         mode="test")
    assert sub.task == task and sub.mode == "test" and sub.filename == "k.py"


@pytest.mark.parametrize(
    "source, filename, message",
    [
        (SOURCE, "kernel.txt", "ending in .py"),
        (SOURCE, "k" * 253 + ".py", "The file name is 256 characters long; at most 255"),
        (SOURCE, "dir/" + "k" * 300 + ".txt", "The file name is 304 characters long; at most 255"),
        ("x = 1\n" * 50_000, "k.py", "The file is 300,000 bytes; the limit is 262,144 bytes (256 KiB)."),
        (b"\xff\xfe def custom_kernel(x): pass", "k.py", "UTF-8"),
        ("def custom_kernel(x:\n", "k.py", "not valid Python"),
        ("def other(x):\n    return x\n", "k.py", "custom_kernel"),
        ("   \n", "k.py", "empty"),
    ],
)
def test_it_rejects_bad_uploads_with_clear_messages(task, owner, eval_queue, source, filename, message):
    with pytest.raises(ValidationError) as info:
        services.submission_create(user=owner, task=task, source=source, filename=filename)
    assert message in " ".join(info.value.messages)
    assert not Submission.objects.exists()


def test_a_name_of_255_characters_is_kept_whole(task, owner, eval_queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sub = services.submission_create(user=owner, task=task, source=SOURCE, filename="d/" + "k" * 252 + ".py")
    assert sub.filename == "k" * 252 + ".py"


def test_it_rejects_unknown_tasks_and_modes(task, owner, eval_queue):
    with pytest.raises(ValidationError, match="Unknown task 'nope'; known tasks: softmax"):
        services.submission_create(user=owner, task="nope", source=SOURCE)
    with pytest.raises(ValidationError, match="Unknown mode"):
        services.submission_create(user=owner, task=task, source=SOURCE, mode="fast")


def test_it_rate_limits_per_user(task, owner, other, settings, eval_queue, django_capture_on_commit_callbacks):
    settings.UPLOAD_RATE_LIMIT_PER_HOUR = 2
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            services.submission_create(user=owner, task=task, source=SOURCE)
        with pytest.raises(services.RateLimited, match="2 submissions per hour") as info:
            services.submission_create(user=owner, task=task, source=SOURCE)
        assert 0 < info.value.params["retry_after_s"] <= 3600
        # the limit is per user
        services.submission_create(user=other, task=task, source=SOURCE)
    assert Submission.objects.filter(user=owner).count() == 2


def test_a_banned_user_cannot_submit(task, owner, staff, eval_queue):
    services.user_ban(user=owner, actor=staff, reason="cheating")
    with pytest.raises(services.NotAllowed, match="banned"):
        services.submission_create(user=owner, task=task, source=SOURCE)


def test_it_routes_by_device_type(settings, eval_queue):
    from leaderboard import routing, scoring

    assert routing.eval_queue_for("cpu") == eval_queue
    assert routing.eval_queue_for("cuda:NVIDIA H200") == "eval-cuda-nvidia-h200"
    settings.WORKER_DEVICE = "cuda"
    settings.WORKER_GPU_NAME = "NVIDIA H200"
    assert routing.default_device_type() == "cuda:NVIDIA H200"
    assert routing.eval_queue_for("cuda:NVIDIA H200") == eval_queue
    assert scoring.device_kind("cuda:NVIDIA H200") == "cuda"
