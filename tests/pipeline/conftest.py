"""Fixtures for the pipeline tests: real worker, web server and Redis processes sharing the test
database with the test (transactional, so every row the test writes is committed and visible)."""
from __future__ import annotations

import types
import uuid

import pytest

import pipeline_helpers as ph


@pytest.fixture
def pipeline(transactional_db, require_postgres, tmp_path):
    from django.db import connection

    redis = ph.RedisServer(tmp_path)
    redis.start()
    queue = f"eval-pipeline-{uuid.uuid4().hex[:8]}"
    env = ph.process_env(database_name=connection.settings_dict["NAME"], broker_url=redis.url, queue=queue)
    port = ph.free_port()
    started: list[ph.Process] = []

    def new_worker(name="pipeline@test"):
        proc = ph.worker(env, queue=queue, name=name, workdir=tmp_path)
        started.append(proc)
        return proc.start()

    def start_web():
        proc = ph.web_server(env, port=port, workdir=tmp_path)
        started.append(proc)
        proc.start()
        ph.wait_for(lambda: _answers(f"http://127.0.0.1:{port}/healthz"), 60, "the web server")
        return proc

    def start_repair():
        proc = ph.repair(env, workdir=tmp_path)
        started.append(proc)
        return proc.start()

    ns = types.SimpleNamespace(redis=redis, queue=queue, env=env, url=f"http://127.0.0.1:{port}",
                               new_worker=new_worker, start_web=start_web, start_repair=start_repair,
                               workdir=tmp_path)
    try:
        yield ns
    finally:
        for proc in started:
            proc.stop(grace=5)
        redis.stop()
        # the processes' connections must be gone before the test database is flushed
        connection.close()


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False
