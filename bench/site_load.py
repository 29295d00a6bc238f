"""Load bench of the site: page latency with 100,000 submissions, and an upload burst.

    eval "$(scripts/services.sh env)"
    .venv/bin/python bench/site_load.py                 # seed (once), measure, print markdown
    .venv/bin/python bench/site_load.py --write docs/bench/site-load.md

What it does, against the PostgreSQL and Redis of $DATABASE_URL / $REDIS_URL:
1. a database of its own (`<name>_bench` beside $DATABASE_URL's), migrated, the evaluator's
   tasks loaded, and --submissions rows bulk-created once (kept between runs; --reseed redoes it);
2. the site under uvicorn on 127.0.0.1 (DEBUG off, the ASGI application), as it is deployed;
3. the home page, the task pages and the API (lists and details as 20 users with their tokens,
   the task list, a board), each for --duration seconds with --clients concurrent keep-alive
   clients and no think time, idle and then while a new result arrives every 1/--churn seconds,
   measured with wrk (a Python thread client without it); the bar is p99 <= 100 ms;
4. an upload burst: --burst submissions POSTed to /api/submissions by 50 users (20 each) from 50
   threads; the per-user limits refuse most (429, an answer); without loss is every 201 one queued
   row with one message in its Redis queue (a queue of this run's own that no worker reads), and
   no row for any 429.

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
    # the maintenance database: $DATABASE_URL's own may not exist yet (the tests create it)
    with psycopg.connect(urlunparse(urlparse(base)._replace(path="/postgres")), autocommit=True) as conn:
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
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from evaluator.tasks import TASKS
    from leaderboard import scoring, services
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
    active: dict[int, int] = {}
    for i in range(n_submissions):
        task = rng.choice(tasks)
        device_type = gpu if rng.random() < 0.7 else "cpu"
        kind = "cuda" if device_type == gpu else "cpu"
        mode = "ranked" if rng.random() < 0.8 else "test"
        created = now - timedelta(seconds=rng.uniform(60, 180 * 86400))
        roll = rng.random()
        user = rng.choices(users, cum_weights=cum)[0]
        status = "done" if roll < 0.98 else ("failed" if roll < 0.99 else "queued")
        if status == "queued":
            # the site holds a user to EVAL_MAX_ACTIVE_PER_USER queued or running at a time
            if active.get(user.pk, 0) >= settings.EVAL_MAX_ACTIVE_PER_USER:
                status = "failed"
            else:
                active[user.pk] = active.get(user.pk, 0) + 1
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
            user=user, task=task, mode=mode, device_type=device_type,
            source=source, filename="kernel.py", source_sha256=f"{i:064x}", status=status, verdict=verdict,
            reasons=(report or {}).get("reasons", []), reason_codes=(report or {}).get("reason_codes", []),
            report=report, logs="compiled 1 kernel\n" if report else "",
            speedup_vs_compile=speedup, speedup_vs_eager=speedup * 1.7 if speedup else None,
            # the tie rule's fields, as the worker's store would write them (no calibration here)
            **scoring.tie_fields(speedup=speedup, shapes=shapes, device_type=device_type, calibration=None),
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
    from leaderboard.services.boards import boards_rebuild

    boards_rebuild()  # the rows came in bulk, past the services that keep the boards' read model
    return {"seeded": True, "submissions": Submission.objects.count(), "seconds": time.perf_counter() - started}


# ---- the server -------------------------------------------------------------------------------


class Server:
    def __init__(self, env: dict, port: int, workers: int, threads: int, app: str = "leaderboard.asgi:application",
                 extra: tuple[str, ...] = ()):
        self.env, self.port, self.workers, self.threads, self.app, self.extra = env, port, workers, threads, app, extra
        self.proc = None

    def __enter__(self):
        uvicorn = Path(sys.executable).parent / "uvicorn"
        self.log = tempfile.NamedTemporaryFile("w+", prefix="site-bench-web-", suffix=".log", delete=False)
        # as deployed (docs/deployment.md): uvicorn on the ASGI application, WEB_THREADS requests
        # inside Django per process
        self.proc = subprocess.Popen(
            [str(uvicorn), self.app, "--host", "127.0.0.1", "--port", str(self.port),
             "--workers", str(self.workers), "--backlog", "512", "--timeout-keep-alive", "30", "--lifespan", "off",
             "--no-server-header", "--log-level", "warning", *self.extra],
            cwd=ROOT, env={**os.environ, **self.env, "WEB_THREADS": str(self.threads)}, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):
                    return self
            except urllib.error.HTTPError:
                return self  # it answers: a 503 only says no worker reads this run's queue
            except (urllib.error.URLError, ConnectionError, OSError):
                if self.proc.poll() is not None:
                    break
                time.sleep(0.3)
        self.__exit__()
        raise SystemExit(f"the web server did not start; see {self.log.name}")

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
    """Where the machine's CPU went during a measurement, in cores: the web server processes, the
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


def wrk_script(requests: list[tuple[str, dict]] | None) -> str:
    """The Lua for wrk: the summary line, and with `requests` a rotation through those requests
    (path and headers: API calls as several users), each wrk thread starting at its own place."""
    if not requests:
        return WRK_LUA
    rows = ",\n".join(
        "  {%s, {%s}}" % (json.dumps(path), ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()))
        for path, headers in requests
    )
    return (
        "local specs = {\n" + rows + "\n}\n"
        "local reqs, i = {}, 0\n"
        "local started = 0\n"
        "setup = function(thread) started = started + 1; thread:set('offset', started * 7919) end\n"
        "init = function(args)\n"
        "  for n, spec in ipairs(specs) do reqs[n] = wrk.format('GET', spec[1], spec[2]) end\n"
        "  i = (offset or 0) % #reqs\n"
        "end\n"
        "request = function() i = i % #reqs + 1; return reqs[i] end\n"
    ) + WRK_LUA


# what every client sends besides its own headers: `Accept-Encoding: gzip`, as HTTP client libraries
# and browsers do, unless --no-gzip
CLIENT_HEADERS: dict = {}


def _with_client_headers(url: str, requests):
    if requests is None:
        parsed = urlparse(url)
        requests = [(parsed.path + (f"?{parsed.query}" if parsed.query else ""), {})]
    return [(path, {**CLIENT_HEADERS, **headers}) for path, headers in requests]


def measure_wrk(url: str, clients: int, duration: int, requests=None) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(wrk_script(_with_client_headers(url, requests)))
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


def measure_threads(url: str, clients: int, duration: int, requests=None) -> dict:
    """Fallback without wrk: keep-alive clients in threads (the client then shares the CPU)."""
    import http.client

    parsed = urlparse(url)
    requests = _with_client_headers(url, requests)
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + duration

    def client(n):
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
        mine = []
        while time.monotonic() < stop_at:
            path, headers = requests[(n := n + 1) % len(requests)]
            t0 = time.perf_counter()
            try:
                conn.request("GET", path, headers=headers)
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

    threads = [threading.Thread(target=client, args=(i * 7919,)) for i in range(clients)]
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


def cold_ms(url: str, headers: dict | None = None) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as r:
        r.read()
    return (time.perf_counter() - t0) * 1e3


class Churn:
    """New results while a page is measured: a done, verified, ranked softmax submission on the
    H200 leaderboard every 1/rate seconds (what workers finishing evaluations look like to the
    pages), with the boards' read model refreshed in the same transaction, as the worker's store
    does (services.boards). Removed afterwards, and the boards with them."""

    def __init__(self, rate: float):
        self.rate, self.stop, self.ids = rate, threading.Event(), []

    def _run(self):
        from django.contrib.auth import get_user_model
        from django.db import connection, transaction

        from leaderboard import scoring
        from leaderboard.models import Submission, Task
        from leaderboard.services.boards import board_entries_refresh

        task = Task.objects.get(name="softmax")
        users = list(get_user_model().objects.filter(username__startswith="bench")[:200])
        rng = random.Random(99)
        try:
            while not self.stop.wait(1.0 / self.rate):
                now = datetime.now(dt_timezone.utc)
                speedup = rng.lognormvariate(-0.1, 0.25)
                with transaction.atomic():
                    sub = Submission.objects.create(
                        user=rng.choice(users), task=task, mode="ranked", device_type="cuda:NVIDIA H200",
                        source=KERNEL, filename="churn.py", status="done", verdict="verified",
                        speedup_vs_compile=speedup, speedup_vs_eager=speedup * 1.7, pct_of_floor=60.0,
                        **scoring.tie_fields(speedup=speedup, shapes=[], device_type="cuda:NVIDIA H200",
                                             calibration=None),
                        gpu_name="NVIDIA H200", celery_task_id=uuid.uuid4().hex, attempts=1,
                        started_at=now, finished_at=now, results_stored=1,
                    )
                    board_entries_refresh(task_id=task.pk, user_id=sub.user_id, device_types=[sub.device_type])
                self.ids.append(sub.pk)
        finally:
            connection.close()

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        from leaderboard.models import Submission
        from leaderboard.services.boards import board_entries_refresh

        self.stop.set()
        self.thread.join(30)
        rows = Submission.objects.filter(pk__in=self.ids)
        touched = set(rows.values_list("task_id", "user_id", "device_type"))
        rows.delete()
        for task_id, user_id, device_type in touched:
            board_entries_refresh(task_id=task_id, user_id=user_id, device_types=[device_type])
        return False


# ---- API callers ------------------------------------------------------------------------------


TOKEN_NAME = "site-load bench"


def api_callers(n_users: int = 20) -> dict:
    """API tokens for `n_users` bench users (the five busiest and others of every size), and the
    requests the API runs send with them: each user's list pages (first, middle and last, 20 and
    100 a page) and ten of each user's own submissions (whatever their state). Tokens are
    removed by drop_api_callers."""
    from django.db.models import Count

    from leaderboard import services
    from leaderboard.models import ApiToken, Submission

    ApiToken.objects.filter(name=TOKEN_NAME).delete()
    counts = list(Submission.objects.filter(user__username__startswith="bench").values("user_id")
                  .annotate(n=Count("pk")).order_by("-n", "user_id"))
    rng = random.Random(7)
    chosen = counts[:5] + rng.sample(counts[5:], min(n_users - 5, len(counts) - 5))
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.in_bulk([c["user_id"] for c in chosen])
    lists, details = [], []
    for c in chosen:
        key = services.api_token_create(user=users[c["user_id"]], name=TOKEN_NAME)[1]
        headers = {"Authorization": f"Token {key}"}
        for per_page in (20, 100):
            last = max(1, -(-c["n"] // per_page))
            for page in sorted({1, (last + 1) // 2, last}):
                lists.append((f"/api/submissions?page={page}&per_page={per_page}", headers))
        ids = list(Submission.objects.filter(user_id=c["user_id"]).values_list("pk", flat=True))
        details += [(f"/api/submissions/{pk}", headers) for pk in rng.sample(ids, min(10, len(ids)))]
    rng.shuffle(lists)
    rng.shuffle(details)
    return {"users": len(chosen), "lists": lists, "details": details,
            "submissions_per_user": sorted((c["n"] for c in chosen), reverse=True)}


def drop_api_callers() -> None:
    from leaderboard.models import ApiToken

    ApiToken.objects.filter(name=TOKEN_NAME).delete()


# ---- upload burst --------------------------------------------------------------------------------


def upload_burst(server_url: str, n: int, queue: str, redis_url: str) -> dict:
    """--burst uploads at once; "without loss" is: every 201 has exactly one row, queued, with
    exactly one message in the queue, and every refusal (429, the per-user limits: an answer, not
    a loss) has none; any other answer or no answer counts against it."""
    import redis
    from django.db.models import Count
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
                return key, r.status, json.loads(r.read())["id"], time.perf_counter() - t0
        except urllib.error.HTTPError as exc:
            return key, exc.code, None, time.perf_counter() - t0
        except (OSError, ValueError, KeyError):
            return key, 0, None, time.perf_counter() - t0  # no answer, or not the API's

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(post, jobs))
    elapsed = time.perf_counter() - started
    statuses: dict[int, int] = {}
    for _, status, _, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    accepted = [sid for _, status, sid, _ in results if status == 201]
    refused = sum(1 for _, status, _, _ in results if status == 429)
    rows = Submission.objects.filter(user__username__startswith="burst")
    client = redis.Redis.from_url(redis_url)
    # on_commit enqueue happens before the response; give the last ones a moment all the same
    deadline = time.monotonic() + 10
    while client.llen(queue) < len(accepted) and time.monotonic() < deadline:
        time.sleep(0.2)
    messages = [json.loads(raw)["headers"]["id"] for raw in client.lrange(queue, 0, -1)]
    row_task = dict(rows.values_list("pk", "celery_task_id"))
    queued = set(rows.filter(status="queued").values_list("pk", flat=True))
    # per user: as many rows as 201s (a 429 made none); per accepted id: its row, queued, with
    # exactly one message; no row that no 201 answered, no message without a row
    per_user_rows = dict(rows.values("user__username").annotate(n=Count("pk")).values_list("user__username", "n"))
    user_of_key = dict(zip(keys, (f"burst{i:03d}" for i in range(n_users))))
    per_user_201: dict[str, int] = {}
    for key, status, _, _ in results:
        if status == 201:
            per_user_201[user_of_key[key]] = per_user_201.get(user_of_key[key], 0) + 1
    message_count: dict[str, int] = {}
    for tid in messages:
        message_count[tid] = message_count.get(tid, 0) + 1
    accepted_set = set(accepted)
    lat = sorted(t for _, _, _, t in results)
    summary = {
        "sent": n, "accepted": len(accepted), "refused_429": refused, "statuses": statuses,
        "other_answers": n - len(accepted) - refused, "seconds": elapsed,
        "rows": len(row_task), "queued_rows": len(queued), "queue_length": len(messages),
        "accepted_without_row": len(accepted_set - set(row_task)),
        "accepted_not_queued": len(accepted_set - queued),
        "rows_not_accepted": len(set(row_task) - accepted_set),
        "users_rows_differ_from_201s": sum(1 for u in set(per_user_rows) | set(per_user_201)
                                            if per_user_rows.get(u, 0) != per_user_201.get(u, 0)),
        "accepted_without_one_message": sum(1 for sid in accepted_set if message_count.get(row_task.get(sid), 0) != 1),
        "messages_without_row": len(set(messages) - set(row_task.values())),
        "duplicate_ids": len(accepted) - len(accepted_set),
        "p50_ms": lat[len(lat) // 2] * 1e3, "p95_ms": lat[int(len(lat) * 0.95)] * 1e3,
    }
    summary["without_loss"] = not any(summary[k] for k in (
        "other_answers", "accepted_without_row", "accepted_not_queued", "rows_not_accepted",
        "users_rows_differ_from_201s", "accepted_without_one_message", "messages_without_row", "duplicate_ids"))
    # leave the bench database as seeded
    rows.delete()
    User.objects.filter(username__startswith="burst").delete()
    client.delete(queue)
    return summary


# ---- report ---------------------------------------------------------------------------------------


BAR_P99_MS = 100


def targets(api: dict) -> list[dict]:
    """What is loaded, in order: the pages, then the API (lists and details as several users with
    their tokens, the public task list and board anonymously)."""
    board = "/api/tasks/softmax/leaderboard?device=cuda%3ANVIDIA%20H200"
    return [
        {"name": "/", "path": "/"},
        {"name": "/tasks/softmax/", "path": "/tasks/softmax/"},
        {"name": "/tasks/softmax/?device=cpu", "path": "/tasks/softmax/?device=cpu"},
        {"name": "/tasks/layernorm/", "path": "/tasks/layernorm/"},
        {"name": "GET /api/submissions?page=N&per_page=M", "requests": api["lists"]},
        {"name": "GET /api/submissions/<id>", "requests": api["details"]},
        {"name": "GET /api/tasks", "path": "/api/tasks"},
        {"name": "GET /api/tasks/softmax/leaderboard?device=cuda:NVIDIA H200", "path": board},
    ]


def markdown(args, seeded: dict, runs: list[dict], burst: dict | None, api: dict | None) -> str:
    lines = [
        f"Run {datetime.now(dt_timezone.utc):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPU cores; "
        f"{seeded['submissions']:,} submissions in PostgreSQL; uvicorn {args.workers} workers x "
        f"{args.threads} Django threads (WEB_THREADS), app {args.app}{' ' + args.server_args if args.server_args else ''}, DEBUG off; {args.clients} concurrent keep-alive clients, "
        f"no think time, {args.duration} s per run, client: {runs[0]['client'] if runs else '-'}"
        f"{', asking for gzip (Accept-Encoding: gzip)' if CLIENT_HEADERS else ', not asking for gzip'}."
    ]
    if api:
        lines[0] += (f" API calls as {api['users']} users with their tokens (submissions each: "
                     f"{', '.join(str(n) for n in api['submissions_per_user'][:5])}, ... "
                     f"{api['submissions_per_user'][-1]}), rotating through {len(api['lists'])} list pages "
                     f"and {len(api['details'])} submissions.")
    for churn, title in ((False, "Idle"), (True, f"While a new result arrives every {1 / args.churn:g} s" if args.churn else "")):
        rows = [r for r in runs if r["churn"] == churn]
        if not rows:
            continue
        lines += [
            "", f"{title}:", "",
            "| page or endpoint | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | first ms | new results | CPU: server / wrk / other (cores) | server CPU per request (ms) | p99 <= 100 ms |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in rows:
            lines.append(
                f"| `{r['name']}` | {r['requests']:,} | {r['rps']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | "
                f"{r['p99_ms']:.1f} | {r['max_ms']:.1f} | {r['non2xx'] + r['socket_errors']} | {r['cold_ms']:.0f} | "
                f"{r['new_results']} | {r['server_cores']:.2f} / {r['wrk_cores']:.2f} / {r['other_cores']:.2f} | "
                f"{r['server_cores'] / max(r['rps'], 1e-9) * 1e3:.2f} | {'yes' if meets_bar(r) else 'NO'} |"
            )
    if burst:
        lines += [
            "",
            f"Upload burst: {burst['sent']:,} POST /api/submissions from 50 threads (50 users x 20) in "
            f"{burst['seconds']:.1f} s ({burst['sent'] / burst['seconds']:.0f}/s; p50 {burst['p50_ms']:.0f} ms, "
            f"p95 {burst['p95_ms']:.0f} ms). HTTP statuses: {burst['statuses']}: {burst['accepted']:,} accepted, "
            f"{burst['refused_429']:,} refused (429), {burst['other_answers']} other or no answer. "
            f"Rows: {burst['rows']:,} ({burst['queued_rows']:,} queued); messages in the Redis queue: "
            f"{burst['queue_length']:,}. Accepted without a row: {burst['accepted_without_row']}, without "
            f"exactly one message: {burst['accepted_without_one_message']}, not queued: "
            f"{burst['accepted_not_queued']}; rows no 201 answered: {burst['rows_not_accepted']}; users whose "
            f"rows differ from their 201s: {burst['users_rows_differ_from_201s']}; messages without a row: "
            f"{burst['messages_without_row']}. Without loss: {'yes' if burst['without_loss'] else 'NO'}.",
        ]
    return "\n".join(lines) + "\n"


def meets_bar(r: dict) -> bool:
    return r["p99_ms"] <= BAR_P99_MS and not r["non2xx"] + r["socket_errors"]


def settle(server, limit_s: float = 60) -> None:
    """Wait until the server has worked off what the last run left queued in it (requests wrk
    sent before it stopped), so that it does not count against the next run."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        try:
            urllib.request.urlopen(server.url + "/no-such-page", timeout=10).close()
        except urllib.error.HTTPError:
            pass  # the 404 is the answer: Django answered without a query
        except (urllib.error.URLError, OSError):
            pass
        if time.perf_counter() - t0 < 0.05:
            return
        time.sleep(0.5)


def run_target(measure, server, target: dict, args, churn: bool) -> dict:
    url = server.url + (target.get("path") or "/")
    requests = target.get("requests")
    if churn:
        with CpuShare(server) as cpu, Churn(args.churn) as c:
            result = measure(url, args.clients, args.duration, requests)
        new_results = len(c.ids)
    else:
        with CpuShare(server) as cpu:
            result = measure(url, args.clients, args.duration, requests)
        new_results = 0
    result.update(name=target["name"], churn=churn, new_results=new_results, **cpu.shares)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--submissions", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=5_000)
    ap.add_argument("--reseed", action="store_true")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=int, default=20, help="seconds per run (at most 120)")
    ap.add_argument("--warmup", type=int, default=30, help="at most this many unmeasured seconds per target")
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--churn", type=float, default=1.0,
                    help="new results per second during a second run of every target (0: skip those)")
    ap.add_argument("--only", default="", help="comma-separated substrings: measure only targets whose name has one "
                                                   "(=NAME: that name exactly, as =/ for the home page)")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--client", choices=["auto", "wrk", "threads"], default="auto")
    ap.add_argument("--app", default="leaderboard.asgi:application",
                    help="the ASGI application uvicorn serves (bench.asgi_django:application: Django's own "
                         "ASGI handler, for comparison)")
    ap.add_argument("--server-args", default="", help="more arguments for uvicorn (--http h11 --loop asyncio: "
                                                      "its pure-Python parser and loop)")
    ap.add_argument("--no-gzip", action="store_true",
                    help="clients do not send Accept-Encoding: gzip (they do by default, as client libraries do)")
    ap.add_argument("--write", help="append the markdown result to this file")
    ap.add_argument("--json", help="write every figure of the run to this file as JSON")
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
        "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_COOKIES": "0", "EVAL_QUEUE": queue, "LOG_LEVEL": "WARNING",
    }
    setup_django(env)
    if not args.no_gzip:
        CLIENT_HEADERS["Accept-Encoding"] = "gzip"
    seeded = seed(args.submissions, args.users, args.reseed)
    print(f"seed: {seeded}", file=sys.stderr)
    use_wrk = args.client == "wrk" or (args.client == "auto" and shutil.which("wrk"))
    measure = measure_wrk if use_wrk else measure_threads
    runs, burst = [], None
    api = api_callers()
    wanted = [t for t in targets(api) if not args.only or any(t["name"] == o[1:] if o.startswith("=") else o in t["name"]
                                                          for o in args.only.split(","))]
    try:
        with Server(env, args.port, args.workers, args.threads, args.app, tuple(args.server_args.split())) as server:
            for target in wanted:
                first = target.get("requests", [(target.get("path"), {})])[0]
                target["cold_ms"] = cold_ms(server.url + first[0], first[1])
            for target in wanted:
                # every target is cached (the pages and the public reads by pagecache, a caller's
                # own reads by owncache, one key per address and caller): warm them all before
                # measuring (before they were kept per process), with short runs until one
                # shows no request slower than a second (none waited for a page's build) and, for
                # a target that rotates through addresses, every address was asked about ten times
                # per process; at most --warmup seconds. Then measure idle, then with new results.
                deadline = time.monotonic() + args.warmup
                wanted_requests = 10 * len(target.get("requests") or [()]) * args.workers
                sent = 0
                while time.monotonic() < deadline:
                    warm = measure(server.url + (target.get("path") or "/"), args.clients, 2, target.get("requests"))
                    sent += warm["requests"]
                    if warm["max_ms"] < 1000 and sent >= wanted_requests:
                        break
                for churn in (False, True) if args.churn else (False,):
                    result = run_target(measure, server, target, args, churn)
                    result["cold_ms"] = target["cold_ms"]
                    print(json.dumps(result), file=sys.stderr)
                    runs.append(result)
                    settle(server)
            if args.burst:
                burst = upload_burst(server.url, args.burst, queue, redis_url)
                print(json.dumps(burst), file=sys.stderr)
    finally:
        drop_api_callers()
    text = markdown(args, seeded, runs, burst, api)
    print(text)
    if args.write:
        with open(args.write, "a") as f:
            f.write("\n" + text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "burst": burst, "seeded": seeded}, f, indent=1)
    failed = not all(meets_bar(r) for r in runs) or bool(burst and not burst["without_loss"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
