"""leaderboard/serving/finish_wait.py against the real Redis: an announcement wakes the waiter of that
submission only, the row decides, and without Redis the reads alone still end the wait."""
from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
import redis

from leaderboard.serving import finish_wait


@pytest.fixture
def live_redis(settings):
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError:
        import os

        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"Redis at {settings.REDIS_URL} is required under CI=true")
        pytest.skip("Redis not available")
    return client


def run(coroutine):
    """asyncio.run in a thread of its own: a browser test before this one on the same worker leaves
    Playwright's event loop running in this thread."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def publish_later(client, pk: int, after_s: float):
    def send():
        time.sleep(after_s)
        client.publish(f"{finish_wait._prefix()}{pk}", b"1")
    threading.Thread(target=send, daemon=True).start()


def finish_while_waiting(pk: int, state: dict, then) -> tuple[bool, float]:
    """A waiter on `pk` whose row reads state["finished"]; once the hub listens, the row is
    finished and `then()` runs (an announcement, or none). (its result, seconds from then on)"""
    async def is_finished():
        state["reads"] = state.get("reads", 0) + 1
        return state["finished"]

    async def scenario():
        waiting = asyncio.ensure_future(finish_wait.wait(pk, 15, is_finished))
        await asyncio.wait_for(finish_wait.hub().listening.wait(), 5)
        await asyncio.sleep(0.3)
        state["finished"] = True  # the row is written, then announced
        await asyncio.to_thread(then)
        started = time.monotonic()
        done = await waiting
        return done, time.monotonic() - started

    return run(scenario())


def test_the_announcement_of_its_submission_wakes_the_waiter_at_once(live_redis):
    state = {"finished": False}
    done, took = finish_while_waiting(7, state, lambda: publish_later(live_redis, 7, 0.0))
    assert done is True and took < 1.0, took
    # at once, again when the hub listens (a finish in between is not announced to it), on the message
    assert state["reads"] == 3


def test_another_submissions_announcement_is_only_a_reason_to_read_again(live_redis):
    reads = []

    async def is_finished():
        reads.append(time.monotonic())
        return False

    publish_later(live_redis, 8, 0.5)  # not ours (ours is 9): read again, find it unfinished, sleep on
    started = time.monotonic()
    done = run(finish_wait.wait(9, 2, is_finished))
    assert done is False and 2 <= time.monotonic() - started < 3
    # at once, when the hub listens, at the deadline: 8's message woke nobody
    assert len(reads) == 3


def test_without_redis_the_reads_alone_end_the_wait(settings, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        settings.REDIS_URL = f"redis://127.0.0.1:{s.getsockname()[1]}/0"
    monkeypatch.setattr(finish_wait, "SLICE_S", 0.2)
    monkeypatch.setattr(finish_wait, "LISTEN_WAIT_S", 0.1)
    finished_at = time.monotonic() + 0.5

    async def is_finished():
        return time.monotonic() >= finished_at

    started = time.monotonic()
    assert run(finish_wait.wait(10, 5, is_finished)) is True
    assert time.monotonic() - started < 1.5


def test_a_finish_announced_to_nobody_is_read_when_the_hub_listens_again(live_redis):
    """The hub's connection is cut (a Redis restart, a network blip): the finish meanwhile reaches
    no one, so every waiter reads again once the hub listens again."""
    done, took = finish_while_waiting(11, {"finished": False},
                                      lambda: live_redis.client_kill_filter(_type="pubsub"))  # and no message
    assert done is True and took < 3, took


def test_a_database_name_with_glob_characters_is_matched_as_it_is(live_redis, monkeypatch):
    """The channel carries the database's name (under make run, a SQLite path): the listener's
    pattern matches it literally, so a path with [ ] * ? in it still wakes its waiters."""
    monkeypatch.setattr(finish_wait, "_prefix", lambda: "lb:finished:/tmp/site[1]*?/db.sqlite3:")
    done, took = finish_while_waiting(12, {"finished": False}, lambda: publish_later(live_redis, 12, 0.0))
    assert done is True and took < 1.0, took
