"""A Redis restart empties every worker's heartbeat key while every worker lives: until Redis has
been up for a key's TTL the keys say nothing, so the repair job does not take their absence for
dead workers (it would re-queue every running evaluation)."""
from __future__ import annotations

import time

import redis

from leaderboard import liveness
from pipeline_helpers import RedisServer, wait_for


def test_missing_keys_say_nothing_until_redis_has_been_up_for_a_ttl(tmp_path, settings):
    settings.WORKER_ALIVE_TTL_S = 3
    server = RedisServer(tmp_path)
    server.start()
    try:
        client = redis.Redis(port=server.port)
        # just started (as after a restart): no key, and that is not "no worker"
        assert liveness.live_workers(client) == {}
        assert liveness.alive_nodes(client) is None
        liveness.publish(node="live@gpu0", queues=["eval-gpu"], client=client)
        assert liveness.alive_nodes(client) is None
        wait_for(lambda: int(client.info("server")["uptime_in_seconds"]) >= 3, 10, "three seconds of uptime")
        assert liveness.alive_nodes(client) == {"live@gpu0"}
        liveness.withdraw(node="live@gpu0", queues=["eval-gpu"], client=client)
        assert liveness.alive_nodes(client) == set()  # up long enough: a missing key is a dead worker
    finally:
        server.stop()
    # Redis away: unknown, not "nobody"
    time.sleep(0.1)
    assert liveness.alive_nodes(redis.Redis(port=server.port, socket_connect_timeout=0.5)) is None
