"""Celery tasks: an interface like a view. Each takes ids, loads rows and calls services.

evaluate_submission runs on the queue of the submission's device type, one at a time per worker
(concurrency 1, prefetch 1, acks_late: a worker killed mid-evaluation leaves its message
unacknowledged). What makes it safe to run twice is the claim, not the broker.
"""
from __future__ import annotations

import json
import logging
import threading
import time

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections, connection

from leaderboard import scoring, services
from leaderboard.celery import app
from leaderboard.models import Submission
from leaderboard.services import profiling

log = logging.getLogger(__name__)

REAPER_INTERVAL_S = float(settings.EVAL_REAPER_INTERVAL_S)


class _Heartbeat:
    """Touches the row every EVAL_HEARTBEAT_S while the sandbox runs, from a thread with its own
    database connection; the stuck-submission job tells a dead worker by a stale heartbeat. The
    judge's progress (`progress(line)`, called by the sandbox's watcher) becomes the row's phase
    within a second, from the same thread."""

    def __init__(self, submission: Submission):
        self.submission = submission
        self.stop = threading.Event()
        self.latest = self.shown = None
        self.thread = threading.Thread(target=self._run, name=f"heartbeat-{submission.pk}", daemon=True)

    def progress(self, line: dict) -> None:
        from evaluator import progress_words

        self.latest = progress_words(line)

    def _run(self):
        beat = time.monotonic()
        try:
            while not self.stop.wait(0.5):
                try:
                    if self.latest and self.latest != self.shown:
                        self.shown = self.latest
                        services.submission_set_phase(submission=self.submission, phase=self.shown)
                        beat = time.monotonic()  # the phase write is a heartbeat too
                    elif time.monotonic() - beat >= settings.EVAL_HEARTBEAT_S:
                        services.submission_heartbeat(submission=self.submission)
                        beat = time.monotonic()
                except Exception as exc:  # a database hiccup must not end the evaluation
                    log.warning("heartbeat for %s failed: %s", self.submission.pk, exc)
                    close_old_connections()
        finally:
            connection.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)
        return False


def sandbox_limits(device: str, time_limit_s: float):
    import dataclasses

    import sandbox

    return dataclasses.replace(sandbox.Limits.from_env(), time_limit_s=float(time_limit_s),
                               gpu_index=settings.WORKER_GPU_INDEX if device == "cuda" else None)


def sandbox_evaluate(*, source: bytes, task: str, mode: str, device: str, on_progress=None,
                     definition: dict | None = None):
    """Exactly what a worker runs for one submission (also `manage.py evaluate`). A ranked GPU
    evaluation first has the task's baselines in the judge's cache (sandbox/warm.py: once per
    task and process), so that none is timed after a cold compile. `definition` is the stored
    definition of a task the site added (Task.definition): its files go into the box read-only,
    and nothing here imports them."""
    import sandbox

    task_files = {rel: text.encode() for rel, text in (definition or {}).items()} or None
    if mode == "ranked":
        sandbox.warm_before(task, device=device, backend=settings.SANDBOX_BACKEND or None,
                            limits=sandbox_limits(device, settings.SANDBOX_WARM_LIMIT_S), task_files=task_files)
    limits = sandbox_limits(device, settings.SANDBOX_TIME_LIMIT_S)
    return sandbox.evaluate(
        source=source, task=task, mode=mode, device=device, backend=settings.SANDBOX_BACKEND or None,
        limits=limits, on_progress=on_progress, task_files=task_files,
    )


def _run_sandbox(submission: Submission, on_progress=None):
    return sandbox_evaluate(
        source=submission.source.encode(),
        task=submission.task.name,
        mode=submission.mode,
        device=scoring.device_kind(submission.device_type),
        on_progress=on_progress,
        definition=submission.task.definition,
    )


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.EVAL_SOFT_LIMIT_S,
    time_limit=settings.EVAL_HARD_LIMIT_S,
    max_retries=None,  # the row's attempts count decides, across retries and re-queues
)
def evaluate_submission(self, submission_id: int) -> str:
    from sandbox import SandboxError

    # users in turn: this message runs whichever queued submission is next in fair order
    submission = services.submission_claim_next(submission_id=submission_id, message_id=self.request.id or "",
                                                worker=self.request.hostname or "")
    if submission is None:
        log.info("message for submission %s: nothing queued is due (already claimed or finished)", submission_id)
        return "skipped"
    log.info("submission %s: claimed (attempt %s)", submission.pk, submission.attempts)
    try:
        with _Heartbeat(submission) as heartbeat:
            services.submission_set_phase(submission=submission, phase="starting the sandbox")
            result = _run_sandbox(submission, on_progress=heartbeat.progress)
        services.submission_set_phase(submission=submission, phase="storing")
        stored = services.submission_store_result(submission=submission, report=result.report, logs=result.logs)
        if stored:
            profiling.profile_file_store(submission=submission, data=result.profile_file)
    except (SandboxError, SoftTimeLimitExceeded) as exc:
        return _infrastructure_failure(self, submission, exc)
    except Exception as exc:  # a bug or the database: not the user's fault either, and logged
        log.exception("submission %s: evaluation failed", submission.pk)
        return _infrastructure_failure(self, submission, exc)
    return "stored" if stored else "discarded"


@shared_task(acks_late=True, soft_time_limit=2 * settings.TASK_BOX_LIMIT_S + settings.EVAL_OVERHEAD_S)
def add_task_file(addition_id: int) -> str:
    """A task file staff uploaded in the audit console, read on this worker (its device, between
    evaluations): describe and triage in boxes, the outcome stored a line per problem."""
    done = services.task_addition_run(addition_id=addition_id)
    return "skipped" if done is None else done.status


def _infrastructure_failure(task, submission: Submission, exc: Exception) -> str:
    """The evaluation could not run for a reason that is not the submission's: retried within
    EVAL_MAX_ATTEMPTS claims, then failed. The owner reads what happened in words (an exception's
    text can name host paths); staff read the whole trace in the audit console."""
    import traceback

    from sandbox import SandboxError

    if isinstance(exc, SoftTimeLimitExceeded):
        what = f"the sandbox did not return within {settings.EVAL_SOFT_LIMIT_S} s"
    elif isinstance(exc, SandboxError):
        what = "the sandbox or the judge failed"
    else:
        what = "the worker hit an internal error"
    detail = "".join(traceback.format_exception(exc))
    log.warning("submission %s: %s (attempt %s): %s", submission.pk, what, submission.attempts, exc)
    head = f"The evaluation could not run: {what}. This is not your code."
    if submission.attempts >= settings.EVAL_MAX_ATTEMPTS:
        services.submission_fail(
            submission=submission, detail=detail,
            error=f"{head} Gave up after {submission.attempts} attempts; staff are told and can run it again.",
        )
        return "failed"
    countdown = settings.EVAL_RETRY_BACKOFF_S * 2 ** (submission.attempts - 1)
    message = f"{head} It is tried again (attempt {submission.attempts} of {settings.EVAL_MAX_ATTEMPTS} failed)."
    if services.submission_release_for_retry(submission=submission, error=message, countdown_s=countdown,
                                             detail=detail):
        raise task.retry(countdown=countdown, exc=exc)
    return "discarded"


# ---- the repair job ------------------------------------------------------------------------


def broker_task_ids(queues: list[str]) -> set[str] | None:
    """Task ids of the messages a Redis broker holds: waiting in these queues or delivered and
    not yet acknowledged. None when the broker is not Redis or cannot be read."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    import redis

    try:
        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        raw = []
        for queue in queues:
            # kombu keeps priorities as sibling lists "<queue>\x06\x16<n>"
            for key in {queue.encode(), *client.scan_iter(match=queue + "\x06\x16*")}:
                raw.extend(client.lrange(key, 0, -1))
        unacked = [json.loads(v)[0] for v in client.hvals("unacked")]
    except Exception as exc:
        log.warning("could not read the broker's queues: %s", exc)
        return None
    ids = set()
    for message in [*(json.loads(r) for r in raw), *unacked]:
        task_id = (message.get("headers") or {}).get("id")
        if task_id:
            ids.add(task_id)
    return ids


def requeue_stuck_once() -> dict:
    """The repair job, as the repair process runs it (`manage.py requeue_stuck --every S`), apart
    from every worker: a repair that lived in a worker would die with the worker it repairs."""
    from leaderboard import liveness

    counts = services.submissions_requeue_stuck(broker_task_ids=broker_task_ids, alive_nodes=liveness.alive_nodes)
    if any(counts.values()):
        log.warning("requeue_stuck: %s", counts)
    return counts


@shared_task(acks_late=False, ignore_result=True)
def sandbox_cleanup() -> dict:
    """Containers, cgroups and work directories left by a killed worker, once past their run's
    deadline (a running evaluation is never touched)."""
    from sandbox import cleanup

    removed = cleanup.remove_stragglers()
    if any(removed.values()):
        log.warning("sandbox_cleanup removed %s", removed)
    return removed


@shared_task(acks_late=False, ignore_result=True)
def freeze_competitions() -> int:
    """Freeze the standings of competitions that have closed and have every result in."""
    from leaderboard.services import competitions

    return competitions.competitions_freeze_due()


# Run by the one `celery beat` of the site (`make run` starts it beside its workers; the repair of
# stuck submissions is not among them: it runs in a process of its own, requeue_stuck_once). All go
# through the evaluation queue, settings.EVAL_QUEUE, which the beat's process must share with the
# workers (run.sh exports it to both): they run between evaluations on a worker that owns a GPU,
# never beside one.
app.add_periodic_task(REAPER_INTERVAL_S, freeze_competitions.s(), name="freeze closed competitions",
                      queue=settings.EVAL_QUEUE, expires=REAPER_INTERVAL_S)
app.add_periodic_task(10 * REAPER_INTERVAL_S, sandbox_cleanup.s(), name="remove sandbox stragglers",
                      queue=settings.EVAL_QUEUE, expires=10 * REAPER_INTERVAL_S)


@worker_ready.connect
def _requeue_own_orphans(sender=None, **kwargs):
    """A worker that starts cannot be running anything yet: rows marked running under its name
    were lost with its previous process (killed, machine rebooted). Queue them again now rather
    than after the heartbeat goes stale."""
    hostname = getattr(sender, "hostname", "") or ""
    if not hostname:
        return
    try:
        n = services.submissions_requeue_orphans(worker=hostname)
        if n:
            log.warning("re-queued %s submissions left running by a previous %s", n, hostname)
    finally:
        connection.close()


_publisher = None


def _consumer_queues(consumer) -> list[str]:
    try:
        names = [q.name for q in consumer.task_consumer.queues]
    except AttributeError:
        names = []
    return names or [settings.EVAL_QUEUE]


@worker_ready.connect
def _publish_liveness(sender=None, **kwargs):
    """The worker's heartbeat key per queue it consumes (liveness.py), renewed from its main
    process until that process ends: /healthz and the repair tell a dead worker by its absence."""
    global _publisher
    from leaderboard import liveness

    hostname = getattr(sender, "hostname", "") or ""
    if hostname and _publisher is None:
        _publisher = liveness.Publisher(hostname, _consumer_queues(sender)).start()


@worker_shutdown.connect
def _withdraw_liveness(sender=None, **kwargs):
    if _publisher is not None:
        _publisher.close()
