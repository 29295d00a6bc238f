"""Which workers are alive, per queue: each worker keeps a key in Redis that expires unless it is
renewed (`worker-alive:<queue>:<node>`, renewed every WORKER_ALIVE_EVERY_S, gone
WORKER_ALIVE_TTL_S after the last renewal). A worker killed with SIGKILL renews nothing, so its key
is gone within the TTL without anyone having to notice the death: /healthz, the submission page and
the repair job read the keys.

Redis keeps no data across a restart here (no persistence), so right after one every key is gone
though every worker lives; a worker puts its key back within two renewals. Until Redis has been up
for a TTL, `alive_nodes` says "unknown", and the repair job does not take a missing key for a
dead worker (the row's own heartbeat still tells).

Redis rather than Celery's own heartbeat events: those need task events on and a process that
listens to them all the time, where a key with an expiry is one read away for any process."""
from __future__ import annotations

import json
import logging
import os
import threading
import time

from django.conf import settings

log = logging.getLogger(__name__)
PREFIX = "worker-alive:"


def _client():
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2)


def publish(*, node: str, queues: list[str], client=None) -> None:
    client = client or _client()
    value = json.dumps({"node": node, "pid": os.getpid(), "at": time.time()})
    for queue in queues:
        client.set(f"{PREFIX}{queue}:{node}", value, ex=settings.WORKER_ALIVE_TTL_S)


def withdraw(*, node: str, queues: list[str], client=None) -> None:
    client = client or _client()
    client.delete(*[f"{PREFIX}{queue}:{node}" for queue in queues])


def live_workers(client=None, *, queue: str = "*") -> dict[str, list[str]] | None:
    """{queue: [node, ...]} of the workers alive now, of every queue or of one; None when Redis
    cannot be read."""
    try:
        client = client or _client()
        keys = [k.decode() for k in client.scan_iter(match=f"{PREFIX}{queue}:*", count=500)]
    except Exception as exc:  # the broker's errors vary; the caller says "unknown"
        log.warning("could not read the workers' heartbeats: %s", exc)
        return None
    out: dict[str, list[str]] = {}
    for key in keys:
        queue, _, node = key[len(PREFIX):].partition(":")
        out.setdefault(queue, []).append(node)
    return {q: sorted(nodes) for q, nodes in sorted(out.items())}


def alive_nodes(client=None) -> set[str] | None:
    """The workers whose key lives, or None when that says nothing: Redis unreadable, or up for
    less than a TTL (restarted: the live workers have not put their keys back yet)."""
    try:
        client = client or _client()
        uptime = int(client.info("server")["uptime_in_seconds"])
    except Exception as exc:
        log.warning("could not read Redis's uptime: %s", exc)
        return None
    if uptime < settings.WORKER_ALIVE_TTL_S:
        return None
    workers = live_workers(client)
    return None if workers is None else {node for nodes in workers.values() for node in nodes}


class Publisher:
    """A daemon thread in the worker's main process that renews its keys until the process ends."""

    def __init__(self, node: str, queues: list[str]):
        self.node, self.queues = node, queues
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="worker-alive", daemon=True)

    def start(self) -> "Publisher":
        self.thread.start()
        return self

    def _run(self) -> None:
        client = None
        while True:
            try:
                client = client or _client()
                publish(node=self.node, queues=self.queues, client=client)
            except Exception as exc:  # Redis away: try again next time, the key expires meanwhile
                log.warning("worker heartbeat not published: %s", exc)
                client = None
            if self.stop.wait(settings.WORKER_ALIVE_EVERY_S):
                return

    def close(self) -> None:
        self.stop.set()
        try:
            withdraw(node=self.node, queues=self.queues)
        except Exception as exc:
            log.warning("worker heartbeat not withdrawn: %s", exc)
