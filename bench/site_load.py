"""Load bench of the site: page latency with 100,000 submissions, and an upload burst.

    eval "$(scripts/services.sh env)"
    .venv/bin/python bench/site_load.py                 # seed (once), measure, print markdown
    .venv/bin/python bench/site_load.py --write docs/bench/site-load.md

What it does, against the PostgreSQL and Redis of $DATABASE_URL / $REDIS_URL:
1. a database of its own (`<name>_bench` beside $DATABASE_URL's), migrated, the evaluator's
   tasks loaded, and --submissions rows bulk-created once (kept between runs; --reseed redoes it);
2. the site under gunicorn on 127.0.0.1 (DEBUG off), as it would be deployed;
3. the home page and the task pages, each for --duration seconds with --clients concurrent
   keep-alive clients and no think time, measured with wrk (a Python thread client without it);
4. an upload burst: --burst submissions POSTed to /api/submissions by 50 users (20 each, within
   the per-user rate limit) from 50 threads; then every accepted one must be a queued row and a
   message in its Redis queue (a queue of this run's own that no worker reads).

Traffic goes to 127.0.0.1 only; every loop is bounded in count and time.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WRK_LUA = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('RESULT {"requests": %d, "duration_us": %d, "non2xx": %d, "socket_errors": %d,'
    .. ' "p50_ms": %.3f, "p90_ms": %.3f, "p95_ms": %.3f, "p99_ms": %.3f, "max_ms": %.3f, "mean_ms": %.3f}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, latency.mean / 1000))
end
"""

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    # variant {n}
    out = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    _softmax_kernel[(x.shape[0],)](out, x, x.shape[1], x.stride(0), BLOCK=block)
    return out
'''


# ---- database -------------------------------------------------------------------------------


def bench_database_url(base: str) -> str:
    parsed = urlparse(base)
    name = parsed.path.lstrip("/") or "postgres"
    return urlunparse(parsed._replace(path=f"/{name}_bench"))


def ensure_database(base: str, url: str) -> None:
    import psycopg

    name = urlparse(url).path.lstrip("/")
    with psycopg.connect(base, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(env: dict) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()


def seed(n_submissions: int, n_users: int, reseed: bool) -> dict:
    """Bulk-create users and submissions shaped like real traffic; skipped when already there."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from evaluator.tasks import TASKS
    from leaderboard import services
    from leaderboard.models import Submission

    call_command("migrate", verbosity=0)
    tasks = [services.task_sync(spec=spec)[0] for spec in TASKS.values()]
    have = Submission.objects.count()
    if have >= n_submissions and not reseed:
        return {"seeded": False, "submissions": have, "seconds": 0.0}
    started = time.perf_counter()
    User = get_user_model()
    Submission.objects.all().delete()
    User.objects.filter(username__startswith="bench").delete()
    users = User.objects.bulk_create(
        [User(username=f"bench{i:05d}", password="!") for i in range(n_users)], batch_size=2000
    )
    rng = random.Random(1234)
    # a few users submit a lot, most a little (Zipf-like)
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(users))]
    cum = []
    total = 0.0
    for w in weights:
        total += w
        cum.append(total)
    now = datetime.now(dt_timezone.utc)
    gpu = "cuda:NVIDIA H200"
    sources = [KERNEL.replace("{n}", str(i)) for i in range(50)]
    batch = []
    for i in range(n_submissions):
        task = rng.choice(tasks)
        device_type = gpu if rng.random() < 0.7 else "cpu"
        kind = "cuda" if device_type == gpu else "cpu"
        mode = "ranked" if rng.random() < 0.8 else "test"
        created = now - timedelta(seconds=rng.uniform(60, 180 * 86400))
        roll = rng.random()
        status = "done" if roll < 0.98 else ("failed" if roll < 0.99 else "queued")
        verdict = ""
        if status == "done":
            v = rng.random()
            verdict = "verified" if v < 0.6 else ("rejected" if v < 0.9 else "flagged")
        scored = status == "done" and mode == "ranked" and verdict != "rejected"
        speedup = rng.lognormvariate(-0.1, 0.25) if scored else None
        shapes = []
        if scored:
            for shape in task.bench_shapes[kind]:
                compile_ms = rng.uniform(0.1, 2.0)
                cand = compile_ms / speedup
                shapes.append({"shape": shape, "candidate_ms": cand, "eager_ms": compile_ms * 1.7,
                               "compile_ms": compile_ms, "wall_ms": cand * 1.05, "floor_ms": cand * 0.6,
                               "speedup_vs_compile": speedup, "speedup_vs_eager": speedup * 1.7})
        report = None
        if status == "done":
            report = {
                "schema": 1, "verdict": verdict, "reasons": [], "reason_codes": [], "task": task.name,
                "mode": mode, "device": kind, "gpu_name": "NVIDIA H200" if kind == "cuda" else None,
                "versions": {"python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0", "cuda": "12.8"},
                "speedup_vs_compile": speedup, "speedup_vs_eager": speedup * 1.7 if speedup else None,
                "shapes": shapes,
                "tests": [{"shape": s, "passed": verdict != "rejected", "max_abs_err": 1e-7, "message": ""}
                          for s in task.test_shapes],
                "phases": {"startup_s": 1.2, "compile_s": 3.1, "correctness_s": 0.8, "timing_s": 6.0},
                "kernels_launched": ["_softmax_kernel"], "logs": "",
            }
            if verdict == "rejected":
                report["reasons"], report["reason_codes"] = ["output mismatch on M=7, N=131"], ["mismatch"]
            if verdict == "flagged":
                report["reasons"], report["reason_codes"] = ["faster than the task's bound"], ["too_fast_vs_compile"]
        source = rng.choice(sources)
        batch.append(Submission(
            user=rng.choices(users, cum_weights=cum)[0], task=task, mode=mode, device_type=device_type,
            source=source, filename="kernel.py", source_sha256=f"{i:064x}", status=status, verdict=verdict,
            reasons=(report or {}).get("reasons", []), reason_codes=(report or {}).get("reason_codes", []),
            report=report, logs="compiled 1 kernel\n" if report else "",
            speedup_vs_compile=speedup, speedup_vs_eager=speedup * 1.7 if speedup else None,
            pct_of_floor=60.0 * rng.uniform(0.5, 1.5) if scored else None,
            gpu_name="NVIDIA H200" if kind == "cuda" and report else "",
            versions=(report or {}).get("versions", {}), celery_task_id=uuid.uuid4().hex,
            attempts=1 if status != "queued" else 0, created_at=created,
            started_at=created + timedelta(seconds=2) if status != "queued" else None,
            finished_at=created + timedelta(seconds=rng.uniform(10, 90)) if status in ("done", "failed") else None,
            results_stored=1 if status == "done" else 0,
        ))
        if len(batch) == 5000:
            Submission.objects.bulk_create(batch)
            batch.clear()
    if batch:
        Submission.objects.bulk_create(batch)
    # auto_now_add overwrote created_at in bulk_create: put the spread-out dates back
    with connection.cursor() as cur:
        cur.execute(
            f"UPDATE {Submission._meta.db_table} SET created_at = started_at - interval '2 seconds'"
            " WHERE started_at IS NOT NULL"
        )
        cur.execute(f"ANALYZE {Submission._meta.db_table}")
    return {"seeded": True, "submissions": Submission.objects.count(), "seconds": time.perf_counter() - started}


# ---- the server -------------------------------------------------------------------------------


class Server:
    def __init__(self, env: dict, port: int, workers: int, threads: int):
        self.env, self.port, self.workers, self.threads = env, port, workers, threads
        self.proc = None

    def __enter__(self):
        gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or shutil.which("gunicorn")
        if not gunicorn:
            raise SystemExit("gunicorn is not installed (pip install gunicorn)")
        self.log = tempfile.NamedTemporaryFile("w+", prefix="site-bench-gunicorn-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [gunicorn, "leaderboard.wsgi", "--preload", "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers),
             "--worker-class", "gthread", "--threads", str(self.threads), "--backlog", "512",
             "--keep-alive", "30", "--log-level", "warning"],
            cwd=ROOT, env={**os.environ, **self.env}, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):
                    return self
            except (urllib.error.URLError, ConnectionError, OSError):
                if self.proc.poll() is not None:
                    break
                time.sleep(0.3)
        self.__exit__()
        raise SystemExit(f"gunicorn did not start; see {self.log.name}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return False


class CpuShare:
    """Where the machine's CPU went during a measurement, in cores: the gunicorn processes, the
    load client (wrk, a child of this process) and everything else (PostgreSQL, this script, and
    whatever other programs run on the machine: the bench shares it)."""

    def __init__(self, server: "Server"):
        self.server = server
        self.tick = os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _busy() -> int:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v) - v[3] - v[4]  # all but idle and iowait

    def _server(self) -> int:
        total = 0
        pids = [self.server.proc.pid]
        try:
            with open(f"/proc/{self.server.proc.pid}/task/{self.server.proc.pid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
            except OSError:
                pass
        return total

    @staticmethod
    def _children_s() -> float:
        import resource

        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def __enter__(self):
        self.t0, self.busy0, self.server0, self.child0 = time.monotonic(), self._busy(), self._server(), self._children_s()
        return self

    def __exit__(self, *exc):
        wall = time.monotonic() - self.t0
        busy = (self._busy() - self.busy0) / self.tick
        server = (self._server() - self.server0) / self.tick
        wrk = self._children_s() - self.child0
        self.shares = {"server_cores": server / wall, "wrk_cores": wrk / wall,
                       "other_cores": max(0.0, busy - server - wrk) / wall}
        return False


# ---- page load ---------------------------------------------------------------------------------


def measure_wrk(url: str, clients: int, duration: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(WRK_LUA)
    try:
        out = subprocess.run(
            ["wrk", "-t2", f"-c{clients}", f"-d{duration}s", "--timeout", "10s", "-s", f.name, url],
            capture_output=True, text=True, timeout=duration + 60, check=True,
        ).stdout
    finally:
        os.unlink(f.name)
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    result["client"] = "wrk"
    return result


def measure_threads(url: str, clients: int, duration: int) -> dict:
    """Fallback without wrk: keep-alive clients in threads (the client then shares the CPU)."""
    import http.client

    parsed = urlparse(url)
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + duration

    def client():
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
        mine = []
        while time.monotonic() < stop_at:
            t0 = time.perf_counter()
            try:
                conn.request("GET", parsed.path + (f"?{parsed.query}" if parsed.query else ""))
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
                ok = False
            mine.append(time.perf_counter() - t0)
            if not ok:
                with lock:
                    errors[0] += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + 30)
    elapsed = time.perf_counter() - started
    q = statistics.quantiles(latencies, n=100)
    return {"requests": len(latencies), "non2xx": errors[0], "socket_errors": 0,
            "p50_ms": q[49] * 1e3, "p90_ms": q[89] * 1e3, "p95_ms": q[94] * 1e3, "p99_ms": q[98] * 1e3,
            "max_ms": max(latencies) * 1e3, "mean_ms": statistics.fmean(latencies) * 1e3,
            "rps": len(latencies) / elapsed, "client": "python threads"}


def cold_ms(url: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        r.read()
    return (time.perf_counter() - t0) * 1e3


class Churn:
    """New results while a page is measured: a done, verified, ranked softmax submission on the
    H200 leaderboard every 1/rate seconds (what workers finishing evaluations look like to the
    pages). Removed afterwards."""

    def __init__(self, rate: float):
        self.rate, self.stop, self.ids = rate, threading.Event(), []

    def _run(self):
        from django.contrib.auth import get_user_model
        from django.db import connection

        from leaderboard.models import Submission, Task

        task = Task.objects.get(name="softmax")
        users = list(get_user_model().objects.filter(username__startswith="bench")[:200])
        rng = random.Random(99)
        try:
            while not self.stop.wait(1.0 / self.rate):
                now = datetime.now(dt_timezone.utc)
                speedup = rng.lognormvariate(-0.1, 0.25)
                sub = Submission.objects.create(
                    user=rng.choice(users), task=task, mode="ranked", device_type="cuda:NVIDIA H200",
                    source=KERNEL, filename="churn.py", status="done", verdict="verified",
                    speedup_vs_compile=speedup, speedup_vs_eager=speedup * 1.7, pct_of_floor=60.0,
                    gpu_name="NVIDIA H200", celery_task_id=uuid.uuid4().hex, attempts=1,
                    started_at=now, finished_at=now, results_stored=1,
                )
                self.ids.append(sub.pk)
        finally:
            connection.close()

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        from leaderboard.models import Submission

        self.stop.set()
        self.thread.join(30)
        Submission.objects.filter(pk__in=self.ids).delete()
        return False


# ---- upload burst --------------------------------------------------------------------------------


def upload_burst(server_url: str, n: int, queue: str, redis_url: str) -> dict:
    import redis
    from django.contrib.auth import get_user_model

    from leaderboard import services
    from leaderboard.models import Submission

    per_user = 20
    User = get_user_model()
    User.objects.filter(username__startswith="burst").delete()
    n_users = (n + per_user - 1) // per_user
    keys = []
    for i in range(n_users):
        user = User.objects.create_user(f"burst{i:03d}")
        keys.append(services.api_token_create(user=user, name="bench")[1])
    jobs = [(keys[i // per_user], i) for i in range(n)]

    def post(job):
        key, i = job
        body = json.dumps({"task": "softmax", "mode": "ranked", "filename": f"burst{i}.py",
                           "source": KERNEL.replace("{n}", f"burst {i}")}).encode()
        req = urllib.request.Request(f"{server_url}/api/submissions", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Token {key}"})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())["id"], time.perf_counter() - t0
        except urllib.error.HTTPError as exc:
            return exc.code, None, time.perf_counter() - t0

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(post, jobs))
    elapsed = time.perf_counter() - started
    accepted = [sid for status, sid, _ in results if status == 201]
    statuses: dict[int, int] = {}
    for status, _, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    rows = Submission.objects.filter(user__username__startswith="burst")
    queued_rows = rows.filter(status="queued")
    client = redis.Redis.from_url(redis_url)
    # on_commit enqueue happens before the response; give the last ones a moment all the same
    deadline = time.monotonic() + 10
    while client.llen(queue) < len(accepted) and time.monotonic() < deadline:
        time.sleep(0.2)
    in_queue = {json.loads(raw)["headers"]["id"] for raw in client.lrange(queue, 0, -1)}
    row_ids = set(queued_rows.values_list("celery_task_id", flat=True))
    lat = sorted(t for _, _, t in results)
    summary = {
        "sent": n, "accepted": len(accepted), "statuses": statuses, "seconds": elapsed,
        "rows": rows.count(), "queued_rows": queued_rows.count(), "queue_length": client.llen(queue),
        "rows_without_message": len(row_ids - in_queue), "messages_without_row": len(in_queue - row_ids),
        "duplicate_ids": len(accepted) - len(set(accepted)),
        "p50_ms": lat[len(lat) // 2] * 1e3, "p95_ms": lat[int(len(lat) * 0.95)] * 1e3,
    }
    # leave the bench database as seeded
    rows.delete()
    User.objects.filter(username__startswith="burst").delete()
    client.delete(queue)
    return summary


# ---- report ---------------------------------------------------------------------------------------


def markdown(args, seeded: dict, pages: list[dict], burst: dict | None) -> str:
    lines = [
        f"Run {datetime.now(dt_timezone.utc):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPU cores; "
        f"{seeded['submissions']:,} submissions in PostgreSQL; gunicorn {args.workers} workers x "
        f"{args.threads} threads (gthread), DEBUG off; {args.clients} concurrent keep-alive clients, "
        f"no think time, {args.duration} s per page, client: {pages[0]['client'] if pages else '-'}.",
        "",
        "| page | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | first (uncached) ms | CPU: server / wrk / other (cores) | server CPU per request (ms) | p95 < 100 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for p in pages:
        lines.append(
            f"| {p.get('label') or '`' + p['path'] + '`'} | {p['requests']:,} | {p['rps']:.0f} | {p['p50_ms']:.1f} | {p['p95_ms']:.1f} | "
            f"{p['p99_ms']:.1f} | {p['max_ms']:.1f} | {p['non2xx'] + p['socket_errors']} | {p['cold_ms']:.0f} | "
            f"{p['server_cores']:.2f} / {p['wrk_cores']:.2f} / {p['other_cores']:.2f} | "
            f"{p['server_cores'] / p['rps'] * 1e3:.2f} | "
            f"{'yes' if p['p95_ms'] < 100 and not p['non2xx'] + p['socket_errors'] else 'NO'} |"
        )
    if burst:
        ok = (burst["accepted"] == burst["sent"] == burst["queued_rows"] == burst["queue_length"]
              and not burst["rows_without_message"] and not burst["messages_without_row"])
        lines += [
            "",
            f"Upload burst: {burst['sent']:,} POST /api/submissions from 50 threads (50 users x 20) in "
            f"{burst['seconds']:.1f} s ({burst['sent'] / burst['seconds']:.0f}/s; p50 {burst['p50_ms']:.0f} ms, "
            f"p95 {burst['p95_ms']:.0f} ms). HTTP statuses: {burst['statuses']}. "
            f"Rows created: {burst['rows']:,}, queued: {burst['queued_rows']:,}; messages in the Redis queue: "
            f"{burst['queue_length']:,}; rows without a message: {burst['rows_without_message']}, messages "
            f"without a row: {burst['messages_without_row']}. Without loss: {'yes' if ok else 'NO'}.",
        ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--submissions", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=5_000)
    ap.add_argument("--reseed", action="store_true")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=int, default=20, help="seconds per page (at most 120)")
    ap.add_argument("--warmup", type=int, default=30, help="at most this many unmeasured seconds per page")
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--churn", type=float, default=1.0,
                    help="new results per second during an extra run of the task page (0: skip it)")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--client", choices=["auto", "wrk", "threads"], default="auto")
    ap.add_argument("--write", help="append the markdown result to this file")
    args = ap.parse_args(argv)
    args.duration = max(1, min(args.duration, 120))
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        raise SystemExit("DATABASE_URL must point at PostgreSQL: eval \"$(scripts/services.sh env)\"")
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    db_url = bench_database_url(base)
    ensure_database(base, db_url)
    queue = f"eval-bench-{secrets.token_hex(4)}"
    env = {
        "DATABASE_URL": db_url, "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url, "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(40), "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_COOKIES": "0", "EVAL_QUEUE": queue, "LOG_LEVEL": "WARNING",
    }
    setup_django(env)
    seeded = seed(args.submissions, args.users, args.reseed)
    print(f"seed: {seeded}", file=sys.stderr)
    use_wrk = args.client == "wrk" or (args.client == "auto" and shutil.which("wrk"))
    measure = measure_wrk if use_wrk else measure_threads
    pages, burst = [], None
    with Server(env, args.port, args.workers, args.threads) as server:
        paths = ("/", "/tasks/softmax/", "/tasks/softmax/?device=cpu", "/tasks/layernorm/")
        colds = {path: cold_ms(server.url + path) for path in paths}
        # every worker process builds its own cache: warm them all before measuring (short runs
        # until one shows no request slower than a second, i.e. none waited for a build; at most
        # --warmup seconds per page), then measure that page
        for path in paths:
            deadline = time.monotonic() + args.warmup
            while time.monotonic() < deadline:
                if measure(server.url + path, args.clients, 2)["max_ms"] < 1000:
                    break
            with CpuShare(server) as cpu:
                result = measure(server.url + path, args.clients, args.duration)
            result.update(path=path, cold_ms=colds[path], **cpu.shares)
            print(json.dumps(result), file=sys.stderr)
            pages.append(result)
        if args.churn:
            path = "/tasks/softmax/"
            with CpuShare(server) as cpu, Churn(args.churn) as churn:
                result = measure(server.url + path, args.clients, args.duration)
            result.update(path=path, cold_ms=colds[path], **cpu.shares,
                          label=f"`{path}` while {len(churn.ids)} new results arrive ({args.churn:g}/s)")
            print(json.dumps(result), file=sys.stderr)
            pages.append(result)
        if args.burst:
            burst = upload_burst(server.url, args.burst, queue, redis_url)
            print(json.dumps(burst), file=sys.stderr)
    text = markdown(args, seeded, pages, burst)
    print(text)
    if args.write:
        with open(args.write, "a") as f:
            f.write("\n" + text)
    failed = any(p["p95_ms"] >= 100 or p["non2xx"] or p["socket_errors"] for p in pages)
    if burst:
        failed |= not (burst["accepted"] == burst["sent"] == burst["queued_rows"] == burst["queue_length"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
