"""Waiting for a submission to finish without holding a thread or a database connection: what
`GET /api/submissions/<id>?wait=S` does (leaderboard/serving/asgi_wait.py).

The writes that finish a submission (services/pipeline.py) `announce` it after their commit on a
Redis pub/sub channel named for it and for the database (two sites or two test databases on one
Redis never wake each other). In a web process one `Hub` per event loop listens to all of that
database's channels on one Redis connection and wakes the waiters of the submission named. A
waiter registers, makes sure the hub listens, reads the row once more (it may have finished
before), and sleeps until a message names its submission. A message is only a hint to read the
row again: the row decides. When the hub's connection fails, every waiter reads again once it
listens again, and while Redis is down they read a slice (SLICE_S) apart.

A waiting client costs one coroutine and one asyncio.Event; the process, one Redis connection.
"""
from __future__ import annotations

import asyncio
import logging
import random
import re
import time
import weakref
from typing import Awaitable, Callable

from django.conf import settings
from django.db import connection, transaction

log = logging.getLogger(__name__)

# while the hub cannot listen (Redis down): the longest time between two reads of the row, give
# or take a fifth so that the waiters of one moment do not all read at once. While it listens a
# waiter reads on its message only, and all read once when the hub listens again after a loss.
SLICE_S = 20.0
# how long a waiter gives the hub to (re)subscribe before it goes on with the reads alone
LISTEN_WAIT_S = 2.0


def _prefix() -> str:
    return f"lb:finished:{connection.settings_dict['NAME']}:"


def announce(pk: int) -> None:
    """After the current transaction commits: tell waiters that submission `pk` finished. A Redis
    that is down is logged: waiters then see it at their next read."""
    name = f"{_prefix()}{pk}"

    def send():
        import redis

        try:
            client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
            try:
                client.publish(name, b"1")
            finally:
                client.close()
        except Exception as exc:  # noqa: BLE001 - a hint only; the row is what waiters read
            log.warning("could not announce that submission %s finished: %s", pk, exc)

    transaction.on_commit(send)


class Hub:
    """One loop's listener: waiters by submission id, and the task that reads the channels while
    anyone waits."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.waiters: dict[int, set[asyncio.Event]] = {}
        self.listening = asyncio.Event()
        self.lost = False  # it listened, then its connection failed: messages may have been missed
        self.task: asyncio.Task | None = None

    def watch(self, pk: int) -> asyncio.Event:
        woken = asyncio.Event()
        self.waiters.setdefault(pk, set()).add(woken)
        if self.task is None or self.task.done():
            self.listening.clear()
            self.task = asyncio.get_running_loop().create_task(self._listen())
        return woken

    def unwatch(self, pk: int, woken: asyncio.Event) -> None:
        left = self.waiters.get(pk, set())
        left.discard(woken)
        if not left:
            self.waiters.pop(pk, None)

    async def _listen(self) -> None:
        import redis.asyncio as aioredis

        while self.waiters:
            client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)
            try:
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                # the database's name (a SQLite path under make run) matched as it is, not as a glob
                await pubsub.psubscribe(re.sub(r"([\[\]*?\\])", r"\\\1", self.prefix) + "*")
                self.listening.set()
                if self.lost:  # what finished meanwhile was announced to nobody: everyone reads again
                    self.lost = False
                    self._wake_all()
                while self.waiters:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None:
                        self._wake(message["channel"])
                self.listening.clear()
                await pubsub.aclose()
            except Exception as exc:  # noqa: BLE001 - Redis went away: the waiters read on, a slice apart
                if self.listening.is_set():  # everyone reads again now, then a slice apart
                    self.lost = True
                    self._wake_all()
                self.listening.clear()
                log.warning("not listening for finished submissions: %s", exc)
                await asyncio.sleep(1.0)
            finally:
                await client.aclose()
        self.listening.clear()

    def _wake_all(self) -> None:
        for woken in [w for ws in self.waiters.values() for w in ws]:
            woken.set()

    def _wake(self, channel: bytes) -> None:
        try:
            pk = int(channel.decode().rsplit(":", 1)[1])
        except (ValueError, IndexError):
            return
        for woken in self.waiters.get(pk, ()):
            woken.set()


_hubs: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub]" = weakref.WeakKeyDictionary()


def hub() -> Hub:
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = Hub(_prefix())
    return _hubs[loop]


async def wait(pk: int, timeout_s: float, is_finished: Callable[[], Awaitable[bool]]) -> bool:
    """Until submission `pk` has finished (`is_finished` reads the row) or `timeout_s` pass.
    True when it finished."""
    deadline = time.monotonic() + timeout_s
    listener = hub()
    woken = listener.watch(pk)
    try:
        while True:
            listening = listener.listening.is_set()
            woken.clear()
            if await is_finished():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not listening:  # a finish before the hub listens is not announced to it: read again once it does
                try:
                    await asyncio.wait_for(listener.listening.wait(), min(LISTEN_WAIT_S, left))
                    continue
                except asyncio.TimeoutError:
                    left = deadline - time.monotonic()
            if listener.listening.is_set():  # a message, a re-listen after a loss, or the deadline
                nap = left
            else:
                nap = min(left, SLICE_S * random.uniform(0.8, 1.2))
            try:
                await asyncio.wait_for(woken.wait(), max(0.0, nap))
            except asyncio.TimeoutError:
                pass
    finally:
        listener.unwatch(pk, woken)
