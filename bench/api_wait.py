"""How many clients waiting on `GET /api/submissions/<id>?wait=60` one web process serves.

    eval "$(scripts/services.sh env)"
    .venv/bin/python bench/api_wait.py --clients 250,1000,2000 [--write docs/bench/api-wait.md]

Against the PostgreSQL and Redis of $DATABASE_URL / $REDIS_URL: a database of its own
(`<name>_wait`), migrated, the softmax task loaded, one user with a token. For each count N: the
web server as `make run` starts it (scripts/web.sh: one uvicorn process); N clients, each on its
own connection (asyncio streams in this process), each asking for a queued submission of its own
with ?wait=60. Once all wait: the server's threads, resident memory and open files, the database
connections to this database, the Redis clients, and 200 requests of GET /api/tasks one after
another (the site still answers). Then --finishes of them are failed through services, one at a
time (as a worker ends a submission, announcing it): the time from that write to its client's
answer, which must be 200 with "finished": true, while the others wait on.

Traffic goes to 127.0.0.1 only; every wait is bounded.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KERNEL = "import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, dim=-1)\n"


def wait_database_url(base: str) -> str:
    parsed = urlparse(base)
    return urlunparse(parsed._replace(path=f"/{parsed.path.lstrip('/') or 'postgres'}_wait"))


def ensure_database(base: str, url: str) -> None:
    import psycopg

    name = urlparse(url).path.lstrip("/")
    with psycopg.connect(urlunparse(urlparse(base)._replace(path="/postgres")), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_sample(pid: int) -> dict:
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    return {"threads": len(os.listdir(f"/proc/{pid}/task")), "rss_mb": round(rss_kb / 1024, 1),
            "open_files": len(os.listdir(f"/proc/{pid}/fd"))}


def db_connections() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


def redis_clients(url: str) -> int:
    import redis

    return redis.Redis.from_url(url).info("clients")["connected_clients"]


async def one_client(host: str, port: int, path: str, token: str, connects: asyncio.Semaphore,
                     connected: list) -> tuple[int, dict, float]:
    async with connects:  # at most so many connects at once: the listen backlog
        reader, writer = await asyncio.open_connection(host, port)
    connected.append(1)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Token {token}\r\n"
                 "Connection: close\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 120)
    answered = time.monotonic()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body or b"{}"), answered


def sequential_ms(url: str, n: int) -> list[float]:
    took = []
    for _ in range(n):
        started = time.monotonic()
        with urllib.request.urlopen(url, timeout=30) as resp:
            resp.read()
        took.append((time.monotonic() - started) * 1000)
    return took


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def queued(user, n: int) -> list[int]:
    """`n` queued submissions of one user, written directly (the per-user limits are the upload's,
    not this bench's subject); no message is sent for them."""
    from django.utils import timezone

    from leaderboard.models import Submission, Task

    task = Task.objects.get(name="softmax")
    now = timezone.now()
    rows = Submission.objects.bulk_create([
        Submission(user=user, task=task, source=KERNEL, filename="k.py", mode="test", device_type="cpu",
                   status=Submission.Status.QUEUED, enqueued_at=now) for _ in range(n)])
    return [row.pk for row in rows]


def idle(base: str, limit_s: float = 120) -> float:
    """Seconds until the server answers /healthz in under 30 ms twice running: every waiter's
    first answer made, everyone asleep."""
    started, fast = time.monotonic(), 0
    while fast < 2 and time.monotonic() - started < limit_s:
        t0 = time.monotonic()
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=30).close()
        except OSError:  # a 503: no worker reads this run's queue, which is right
            pass
        fast = fast + 1 if time.monotonic() - t0 < 0.03 else 0
        time.sleep(0.2)
    return time.monotonic() - started


def measure(n: int, *, user, token: str, base: str, pid: int, redis_url: str, finishes: int) -> dict:
    from leaderboard import services
    from leaderboard.models import Submission

    pks = queued(user, n)
    host, port = urlparse(base).hostname, urlparse(base).port
    result: dict = {"clients": n}
    connected: list = []

    async def scenario():
        connects = asyncio.Semaphore(200)
        clients = {pk: asyncio.ensure_future(one_client(host, port, f"/api/submissions/{pk}?wait=60", token,
                                                        connects, connected)) for pk in pks}
        result["all_waiting_s"] = round(await asyncio.to_thread(idle, base), 1)
        early = [c for c in clients.values() if c.done()]
        result["answered_early"] = len(early)
        result["early_sample"] = [repr(c.exception() or c.result())[:300] for c in early[:3]]
        result["server"] = server_sample(pid)
        result["db_connections"] = await asyncio.to_thread(db_connections)
        result["redis_clients"] = await asyncio.to_thread(redis_clients, redis_url)
        others = await asyncio.to_thread(sequential_ms, f"{base}/api/tasks", 200)
        result["tasks_ms"] = {"p50": round(statistics.median(others), 1), "p99": round(pct(others, 99), 1),
                              "max": round(max(others), 1)}

        def finish(pk: int) -> float:
            claimed = services.submission_claim_next(submission_id=pk, worker="bench")
            ended = time.monotonic()
            services.submission_fail(submission=claimed, error="bench: ended without an evaluation")
            return ended

        after = []
        for pk in pks[:finishes]:  # one at a time, as results arrive, while the others wait on
            ended = await asyncio.to_thread(finish, pk)
            status, body, answered = await clients[pk]
            if status == 200 and body.get("finished"):
                after.append((answered - ended) * 1000)
            await asyncio.sleep(0.25)
        result["after_finish_ms"] = {"n": len(after), "p50": round(statistics.median(after), 1),
                                     "max": round(max(after), 1)} if after else None
        await asyncio.to_thread(lambda: Submission.objects.filter(pk__in=pks, status="queued").update(
            status="failed", error="bench: ended"))
        for pk in pks[finishes:]:  # told at their next read, at most a slice later: not measured
            clients[pk].cancel()
        await asyncio.gather(*clients.values(), return_exceptions=True)

    asyncio.run(scenario())
    return result


def markdown(runs: list[dict]) -> str:
    lines = ["| waiting clients | all waiting after | server threads | server RSS | open files | DB connections | "
             "Redis clients (all) | GET /api/tasks meanwhile p50 / p99 / max | finish to answer p50 / max (n) |",
             "|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in runs:
        a, t, s = r["after_finish_ms"] or {}, r["tasks_ms"], r["server"]
        lines.append(f"| {r['clients']:,} | {r['all_waiting_s']} s | {s['threads']} | {s['rss_mb']} MB | "
                     f"{s['open_files']:,} | {r['db_connections']} | {r['redis_clients']} | "
                     f"{t['p50']} / {t['p99']} / {t['max']} ms | {a.get('p50')} / {a.get('max')} ms ({a.get('n')}) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="250,1000,2000")
    parser.add_argument("--finishes", type=int, default=20, help="submissions finished, one at a time, per count")
    parser.add_argument("--json", help="write the raw results here")
    args = parser.parse_args(argv)
    base = os.environ.get("DATABASE_URL", "")
    redis_url = os.environ.get("REDIS_URL", "")
    if not base.startswith("postgres") or not redis_url:
        raise SystemExit('needs PostgreSQL and Redis: eval "$(scripts/services.sh env)" first')
    url = wait_database_url(base)
    ensure_database(base, url)
    queue = f"bench-wait-{uuid.uuid4().hex[:8]}"
    env = {"DATABASE_URL": url, "EVAL_QUEUE": queue, "DEBUG": "0", "SECRET_KEY": uuid.uuid4().hex * 2,
           "ALLOWED_HOSTS": "127.0.0.1", "SECURE_COOKIES": "0"}
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from evaluator.tasks import get_task
    from leaderboard import services
    from leaderboard.models import ApiToken, Submission

    call_command("migrate", verbosity=0)
    services.task_sync(spec=get_task("softmax"))
    user, _ = get_user_model().objects.get_or_create(username="bench-waiter")
    Submission.objects.filter(user=user).delete()
    ApiToken.objects.filter(user=user).delete()
    _, token = services.api_token_create(user=user)

    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", prefix="api-wait-web-", suffix=".log", delete=False)
    web = subprocess.Popen([str(ROOT / "scripts" / "web.sh"), "127.0.0.1", str(port)], cwd=ROOT,
                           env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    runs = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base_url}/api/tasks", timeout=2).close()
                break
            except OSError:
                if web.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the web server did not start; see {log.name}")
                time.sleep(0.3)
        for n in (int(x) for x in args.clients.split(",")):
            run = measure(n, user=user, token=token, base=base_url, pid=web.pid, redis_url=redis_url,
                          finishes=args.finishes)
            print(json.dumps(run), flush=True)
            runs.append(run)
    finally:
        web.terminate()
        web.wait(30)
        import redis

        redis.Redis.from_url(redis_url).delete(queue)
    print(markdown(runs))
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0 if all(r["answered_early"] == 0 and (r["after_finish_ms"] or {}).get("n") == args.finishes
                    for r in runs) else 1


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
