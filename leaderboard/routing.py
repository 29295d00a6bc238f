"""Which device type a new submission is evaluated on and which queue carries its message.

One leaderboard and one queue per device type: a worker consumes exactly one queue, so a GPU
model's results are only ever measured on that model.
"""
from __future__ import annotations

from django.conf import settings

# The Celery task a message names. Services send it by name so that they need not import the
# task module, which itself calls the services.
EVALUATE_TASK = "leaderboard.tasks.evaluate_submission"
# a task file from the audit console, read on the worker's queue (its device, between evaluations)
ADD_TASK_FILE = "leaderboard.tasks.add_task_file"


def default_device_type() -> str:
    """The device type new submissions are evaluated on: "cpu" or "cuda:<GPU name>"."""
    if settings.WORKER_DEVICE == "cpu":
        return "cpu"
    gpu = settings.WORKER_GPU_NAME
    return f"cuda:{gpu}" if gpu else "cuda"


def eval_queue_for(device_type: str) -> str:
    """One queue per device type. The site's own device type uses settings.EVAL_QUEUE (what its
    workers consume); others get "eval-<slug>", e.g. "eval-cuda-nvidia-h200"."""
    if device_type == default_device_type() or device_type == settings.WORKER_DEVICE:
        return settings.EVAL_QUEUE
    return queue_name(device_type)


def queue_name(device_type: str) -> str:
    """"eval-" and the device type in lower case, each run of other characters one "-":
    "cuda:NVIDIA H200" -> "eval-cuda-nvidia-h200". `make run` gives its workers this queue."""
    slug = "".join(c if c.isalnum() else "-" for c in device_type.lower())
    return "eval-" + "-".join(part for part in slug.split("-") if part)
