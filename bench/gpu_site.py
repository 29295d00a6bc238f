"""The GPU leaderboard end to end on a bare GPU host: the stack as `make run` starts it, and every
submission through the real API (docs/bench/gpu-site.md).

    python3 bench/gpu_site.py OUT STAGE [STAGE ...]

Stages, in the order a run takes them (the stack, started with setsid, outlives one call of the
device tool; its state lives in STATE = /tmp/gpu-site):
  setup     Debian packages in .debs/ unpacked into /tmp/kb-debs (Redis, bubblewrap); .venv made
            over the host's torch and Triton (--system-site-packages) with the wheels in .whl/
  start     `make run` (GPU detection, one worker per GPU, warm-up, ruler import), until every
            worker has started; its output in OUT/make-run.log
  users     three accounts with API tokens (manage.py; creating an account is not a submission)
  examples  TASKS (default: all five) ranked through the API one at a time, and each file through
            `python3 -m evaluator run` right after it: upload-to-verdict and the two speedups
  modes     examples/softmax.py in test and profile mode through the API
  kb        each KernelBench-style problem of KB_FILES (default: 11_Linear_ReLU and 6_Masked-Scale
            of tests/data/kernelbench/level1) added with `manage.py add_task` (describe and triage
            in the box on this GPU), then its own reference uploaded ranked as the candidate
            (`class ModelNew(Model)`), queued for `collect` with the examples
  kbcal     the ruler on those added problems: `manage.py calibrate --task NAME ...` (reference vs
            eager, compile vs compile), what the site stored for this GPU
  cheats    eight cheats of tests/exploits, each verdict against the one the suite expects
  queue     QUEUE_N (12) ranked uploads of the examples (or QUEUE_TASKS, in that order) from the three
            users at once, then collect;
            with KILL_IN_QUEUE=1 the worker is killed (as in `kill`) during the first one
  collect   each queued upload once it has finished: its verdict, upload-to-verdict, the site's
            timeline (queued, started, finished, attempts, worker) and the judge's phases; waits
            at most until UNTIL_S, so that a queue longer than one call is collected by the next
  kill      a ranked upload; the worker killed with SIGKILL mid-evaluation, which the launcher
            starts again: the submission ends once, no process of the dead evaluation holds the GPU
  export    the site's rows as JSON (manage.py export_results) into OUT/rows.json
  calibrate the ruler: `python3 -m evaluator calibrate --device cuda` on CAL_TASKS (default all
            five), its rows in OUT/calibrate-<first task>.json
  stop      Ctrl-C to the stack
  table     (anywhere, no stack) the queue's records in OUT/records.jsonl as a table in the order
            the submissions ran, then per task the median and max of upload to verdict and of
            claim to verdict, and the evaluations a minute from the first claim to the last finish
Each stage but `table` appends its records to OUT/records.jsonl.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = Path("/tmp/gpu-site")
DEBS = Path("/tmp/kb-debs")
PORT = 8000
URL = f"http://127.0.0.1:{PORT}"
TASKS = ["softmax", "layernorm", "gelu_bias_residual", "matmul_bias_relu", "transformer_block"]
PY = str(ROOT / ".venv" / "bin" / "python")
# waits end by then (UNTIL_S seconds after this script started, default 540): a device call is at
# most ten minutes, and what is still running is collected by the next call's `collect`
DEADLINE = time.monotonic() + float(os.environ.get("UNTIL_S", "540"))


def env() -> dict:
    e = dict(os.environ)
    e["PATH"] = f"{DEBS}/usr/bin:{DEBS}/usr/sbin:{ROOT}/.venv/bin:" + e["PATH"]
    libs = glob.glob(f"{DEBS}/usr/lib/x86_64-linux-gnu")
    e["LD_LIBRARY_PATH"] = ":".join(libs + [e.get("LD_LIBRARY_PATH", "")]).strip(":")
    # four in flight per user (the site's default is two), so that three users queue twelve at once
    e.update(PORT=str(PORT), HOST="127.0.0.1", PYTHONUNBUFFERED="1", EVAL_MAX_ACTIVE_PER_USER="4")
    return e


def record(out: Path, **row) -> None:
    row["at"] = round(time.time(), 3)
    print(json.dumps(row), flush=True)
    with open(out / "records.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def manage(*args, tries: int = 5) -> str:
    """A management command's output. Tried again after a pause where it fails: right after the
    launcher starts, its own commands may still hold SQLite's write lock. The last failure is
    raised with the command's stderr."""
    link_venv()
    for _ in range(tries):
        # DEBUG=1: the stack's secret key is the launcher's, and without it DEBUG=0 refuses to start
        p = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env() | {"DEBUG": "1"}, capture_output=True,
                           text=True)
        if p.returncode == 0:
            return p.stdout
        time.sleep(3)
    raise RuntimeError(f"manage.py {args[0]} failed {tries} times: {p.stderr[-800:]}")


def link_venv() -> None:
    """The project's .venv is the host's own venv (setup); the link is made again where a new
    copy of the working tree lacks it."""
    venv = ROOT / ".venv"
    if not venv.exists():
        venv.symlink_to(sys.prefix)
    (venv / ".installed").touch()  # make's stamp: the requirements are what the wheels gave


# ---- stages --------------------------------------------------------------------------------------

def setup(out: Path) -> None:
    """The host's interpreter holds torch and Triton in a venv of its own (/opt/torch/.venv on the
    lent H200); the site's packages go into it from the wheels, none that it already has, and the
    project's .venv is that venv, so `make run` finds its interpreter where it looks."""
    from importlib import metadata

    t = time.monotonic()
    for deb in sorted(glob.glob(str(ROOT / ".debs" / "*.deb"))):
        subprocess.run(["dpkg", "-x", deb, str(DEBS)], check=True)
    wheels, skipped = [], []
    for wheel in sorted(glob.glob(str(ROOT / ".whl" / "*.whl"))):
        name = Path(wheel).name.split("-")[0]
        try:
            skipped.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            wheels.append(wheel)
    if wheels:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", *wheels], check=True)
    link_venv()
    check = subprocess.run([PY, "-c", "import django, celery, ninja, uvicorn, a2wsgi, torch, triton; print(django.__version__, "
                            "celery.__version__, torch.__version__, triton.__version__, torch.cuda.get_device_name())"],
                           capture_output=True, text=True, env=env())
    gpus = subprocess.run(["nvidia-smi", "--query-gpu=index,name,uuid,driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()
    bwrap = subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], env=env(), capture_output=True, text=True)
    record(out, stage="setup", seconds=round(time.monotonic() - t, 1), versions=check.stdout.strip(),
           error=check.stderr[-500:], gpus=gpus, bwrap_rc=bwrap.returncode, bwrap_err=bwrap.stderr[-300:],
           installed=[Path(w).name for w in wheels], already_there=skipped)


def start(out: Path) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    link_venv()
    log = open(STATE / "make-run.log", "ab")
    t = time.monotonic()
    proc = subprocess.Popen(["make", "--no-print-directory", "run"], cwd=ROOT, env=env(), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    (STATE / "make-run.pid").write_text(str(proc.pid))
    served = None
    while time.monotonic() - t < 540:
        text = (STATE / "make-run.log").read_text(errors="replace")
        if served is None and _up():
            served = time.monotonic() - t
        if proc.poll() is not None:
            break
        if re.search(r"^worker \S+ started on queue", text, re.M) and served is not None:
            break
        time.sleep(0.5)
    text = (STATE / "make-run.log").read_text(errors="replace")
    (out / "make-run.log").write_text(text)
    record(out, stage="start", served_s=served and round(served, 1), workers_s=round(time.monotonic() - t, 1),
           exited=proc.poll(), warm_lines=[line for line in text.splitlines() if "(" in line and "/5)" in line][-12:])


def _up() -> bool:
    try:
        with urllib.request.urlopen(URL + "/healthz", timeout=2):
            return True
    except (urllib.error.URLError, OSError):
        return False


def users(out: Path) -> None:
    tokens = {}
    for name in ("ann", "ben", "cy"):
        manage("shell", "-c", "from django.contrib.auth import get_user_model as g; "
                              f"g().objects.filter(username='{name}').exists() or "
                              f"g().objects.create_user('{name}', password='gpu-site-{name}-8317')")
        tokens[name] = manage("create_api_token", name).strip()
    (STATE / "tokens.json").write_text(json.dumps(tokens))
    record(out, stage="users", users=sorted(tokens))


def api(path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(URL + path, data=data, method="POST" if data else "GET",
                                 headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def upload(token: str, task: str, mode: str, path: Path) -> tuple[int, float]:
    t = time.time()
    status, body = api("/api/submissions", token, {"task": task, "mode": mode, "source": path.read_text(),
                                                   "filename": path.name})
    assert status == 201, (status, body)
    return body["id"], t


def wait(token: str, pk: int, timeout_s: float = 600) -> dict:
    deadline = min(time.monotonic() + timeout_s, DEADLINE)
    while time.monotonic() < deadline:
        status, body = api(f"/api/submissions/{pk}", token)
        if body.get("status") in ("done", "failed"):
            body["seen_done_at"] = time.time()
            return body
        time.sleep(0.25)
    return {"status": "timeout", "id": pk}


def summary(body: dict) -> dict:
    keep = ("id", "status", "verdict", "reason_codes", "reasons", "speedup_vs_compile", "speedup_vs_eager",
            "gpu_name", "device_type", "error")
    return {k: body.get(k) for k in keep}


def detail(pk: int) -> dict:
    """What the site stored: when it was queued, started and finished, by which worker, after how
    many attempts, and the judge's phases (the report's `phases`) and GPU."""
    code = ("from leaderboard.models import Submission as S; import json; s=S.objects.get(pk=%d); "
            "r=s.report or {}; t=lambda d: d.isoformat() if d else None; "
            "print(json.dumps(dict(created=t(s.created_at), started=t(s.started_at), finished=t(s.finished_at), "
            "attempts=s.attempts, worker=s.worker, phases=r.get('phases'), "
            "gpu=(r.get('gpu_state') or {}).get('before'))))") % pk
    try:
        return json.loads(manage("shell", "-c", code).strip().splitlines()[-1])
    except (RuntimeError, ValueError, IndexError) as exc:
        return {"detail_failed": repr(exc)[:300]}


def examples(out: Path) -> None:
    token = json.loads((STATE / "tokens.json").read_text())["ann"]
    for task in os.environ.get("TASKS", " ".join(TASKS)).split():
        path = ROOT / "examples" / f"{task}.py"
        pk, t = upload(token, task, "ranked", path)
        body = wait(token, pk)
        site = summary(body) | {"upload_to_verdict_s": round(body.get("seen_done_at", time.time()) - t, 1)}
        site["detail"] = detail(pk)
        if os.environ.get("DIRECT", "1") == "0":
            record(out, stage="examples", task=task, site=site)
            continue
        t = time.monotonic()
        report = STATE / f"direct-{task}.json"
        direct = subprocess.run([sys.executable, "-m", "evaluator", "run", str(path), "--task", task, "--device",
                                 "cuda", "--mode", "ranked", "--json", str(report)], cwd=ROOT, capture_output=True,
                                text=True, timeout=400)
        d = json.loads(report.read_text()) if report.exists() else {}
        ratio = None
        if site.get("speedup_vs_compile") and d.get("speedup_vs_compile"):
            ratio = round(site["speedup_vs_compile"] / d["speedup_vs_compile"], 4)
        record(out, stage="examples", task=task, site=site,
               direct={"verdict": d.get("verdict"), "reason_codes": d.get("reason_codes"),
                       "speedup_vs_compile": d.get("speedup_vs_compile"), "speedup_vs_eager": d.get("speedup_vs_eager"),
                       "wall_s": round(time.monotonic() - t, 1), "rc": direct.returncode,
                       "stderr": direct.stderr[-400:] if direct.returncode else ""},
               site_over_direct_vs_compile=ratio)


def modes(out: Path) -> None:
    token = json.loads((STATE / "tokens.json").read_text())["ben"]
    for mode in ("test", "profile"):
        pk, t = upload(token, "softmax", mode, ROOT / "examples" / "softmax.py")
        body = wait(token, pk)
        record(out, stage="modes", mode=mode, site=summary(body),
               upload_to_verdict_s=round(body.get("seen_done_at", time.time()) - t, 1),
               profile=bool(body.get("profile")))


# eight cheats of tests/exploits with the mode and the verdicts that the suite expects on a GPU
CHEATS = [
    ("a01_empty_like.py", "test", {"rejected"}),
    ("a04_return_input.py", "test", {"rejected"}),
    ("a06_side_stream.py", "ranked", {"flagged", "rejected"}),
    ("a07_bf16_compute.py", "test", {"rejected"}),
    ("a14_torch_softmax.py", "test", {"flagged"}),
    ("a14_token_kernel.py", "test", {"flagged"}),
    ("a05_dispatch_mode_lazy.py", "ranked", {"rejected"}),
    ("a12_print_forged_report.py", "test", {"rejected"}),
]


def cheats(out: Path) -> None:
    """Two at a time (the site's limit per user), each verdict against the suite's expectation."""
    token = json.loads((STATE / "tokens.json").read_text())["ben"]
    folder = ROOT / "tests" / "exploits" / "submissions"
    for i in range(0, len(CHEATS), 2):
        sent = [(name, mode, want, *upload(token, "softmax", mode, folder / name)) for name, mode, want in CHEATS[i:i + 2]]
        for name, mode, want, pk, t in sent:
            body = wait(token, pk)
            record(out, stage="cheats", file=name, mode=mode, expected=sorted(want), site=summary(body),
                   as_expected=body.get("verdict") in want, upload_to_verdict_s=round(body["seen_done_at"] - t, 1)
                   if "seen_done_at" in body else None)


def queue(out: Path) -> None:
    """QUEUE_N ranked uploads (default 12) of the five examples from the three users, all sent at
    once (the stack runs with EVAL_MAX_ACTIVE_PER_USER=4), then `collect`."""
    tokens = json.loads((STATE / "tokens.json").read_text())
    # QUEUE_TASKS: the tasks in the order sent (the spread: one example several times)
    order = os.environ.get("QUEUE_TASKS", "").split() or [TASKS[k % len(TASKS)]
                                                          for k in range(int(os.environ.get("QUEUE_N", "12")))]
    names = sorted(tokens)
    sent = _queued()
    for k, task in enumerate(order):
        user = names[k % len(names)]
        while True:  # a user at the site's per-user limit sends when one of theirs has finished
            try:
                pk, t = upload(tokens[user], task, "ranked", ROOT / "examples" / f"{task}.py")
                break
            except AssertionError as e:
                if "queue_full" not in str(e) or time.monotonic() > DEADLINE:
                    raise
                time.sleep(2)
        sent.append({"user": user, "task": task, "id": pk, "sent_at": t})
        (STATE / "queue.json").write_text(json.dumps(sent))
    record(out, stage="queue", sent=sent)
    if os.environ.get("KILL_IN_QUEUE") == "1":  # the kill case on the queue's first evaluation
        _kill_during(out, tokens[sent[0]["user"]], sent[0]["id"])
    collect(out)


def _queued() -> list[dict]:
    """The uploads already queued in this run (kb's before the examples')."""
    path = STATE / "queue.json"
    return json.loads(path.read_text()) if path.exists() else []


# a user's honest answer to a KernelBench-style problem, as plain as it gets: the reference itself
REFERENCE_AS_CANDIDATE = """


class ModelNew(Model):
    \"\"\"The reference's own forward, submitted as the candidate.\"\"\"
"""
KB_FILES = "tests/data/kernelbench/level1/11_Linear_ReLU.py tests/data/kernelbench/level1/6_Masked-Scale.py"


def kb(out: Path) -> None:
    tokens = json.loads((STATE / "tokens.json").read_text())
    sent, added = _queued(), []
    for rel in os.environ.get("KB_FILES", KB_FILES).split():
        path = ROOT / rel
        t = time.monotonic()
        try:
            said = manage("add_task", str(path), tries=1).strip()
        except RuntimeError as exc:
            record(out, stage="kb", file=rel, failed=str(exc)[-800:], seconds=round(time.monotonic() - t, 1))
            continue
        record(out, stage="kb", file=rel, add_task=said, seconds=round(time.monotonic() - t, 1))
        m = re.match(r"added (\S+)", said.splitlines()[-1] if said else "")
        if not m:
            continue
        name = m.group(1)
        added.append(name)
        candidate = STATE / f"{name}_reference.py"
        candidate.write_text(path.read_text() + REFERENCE_AS_CANDIDATE)
        pk, at = upload(tokens["ann"], name, "ranked", candidate)
        sent.append({"user": "ann", "task": name, "id": pk, "sent_at": at})
        (STATE / "queue.json").write_text(json.dumps(sent))
    (STATE / "kb-tasks.json").write_text(json.dumps(added))
    record(out, stage="queue", sent=sent)


def kbcal(out: Path) -> None:
    names = json.loads((STATE / "kb-tasks.json").read_text())
    t = time.monotonic()
    link_venv()
    p = subprocess.run([PY, "manage.py", "calibrate", *[a for n in names for a in ("--task", n)]], cwd=ROOT,
                       env=env() | {"DEBUG": "1"}, capture_output=True, text=True)
    stored = manage("shell", "-c", "from leaderboard.models import Task; from leaderboard import routing; "
                                   "import json; d=routing.default_device_type(); print(json.dumps({t.name: "
                                   f"t.calibration_for(d) for t in Task.objects.filter(name__in={names!r})}}, "
                                   "default=str))")
    record(out, stage="kbcal", tasks=names, rc=p.returncode, seconds=round(time.monotonic() - t, 1),
           stdout=p.stdout[-3000:], stderr=p.stderr[-3000:], stored=stored.strip().splitlines()[-1:])


def collect(out: Path) -> None:
    """Each queued upload that has finished and is not yet recorded: its verdict, upload to
    verdict, and the site's timeline and phases; waits until DEADLINE for the rest."""
    tokens = json.loads((STATE / "tokens.json").read_text())
    sent = json.loads((STATE / "queue.json").read_text())
    done_path = STATE / "queue-recorded.json"
    done = set(json.loads(done_path.read_text())) if done_path.exists() else set()
    for row in sent:
        if row["id"] in done:
            continue
        body = wait(tokens[row["user"]], row["id"], timeout_s=1500)
        if body.get("status") == "timeout":
            record(out, stage="collect", left=[r["id"] for r in sent if r["id"] not in done])
            return
        record(out, stage="queue", user=row["user"], task=row["task"], site=summary(body), detail=detail(row["id"]),
               upload_to_verdict_s=round(body["seen_done_at"] - row["sent_at"], 1))
        done.add(row["id"])
        done_path.write_text(json.dumps(sorted(done)))
    record(out, stage="collect", left=[])


def gpu_apps() -> str:
    if not shutil.which("nvidia-smi"):
        return "(no nvidia-smi)"
    return subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()


def kill(out: Path) -> None:
    """SIGKILL to the GPU worker (its main process and its pool's child) mid-evaluation; the
    launcher starts it again under its name, which re-queues the evaluation it was running."""
    token = json.loads((STATE / "tokens.json").read_text())["cy"]
    pk, t = upload(token, "softmax", "ranked", ROOT / "examples" / "softmax.py")
    _kill_during(out, token, pk)
    body = wait(token, pk, timeout_s=420)
    record(out, stage="kill", id=pk, gpu_apps_end=gpu_apps(), final=summary(body) | _attempts(pk),
           upload_to_verdict_s=round(body.get("seen_done_at", time.time()) - t, 1),
           workers_now=[line for line in _ps() if "celery" in line and " worker " in line])


def _kill_during(out: Path, token: str, pk: int) -> None:
    """Waits until submission `pk` has been running for 20 s (its runners hold the GPU), then
    kills every Celery worker process with SIGKILL and records what held the GPU and which
    evaluation processes were left, at once and 5 s later."""
    seen = None
    while time.monotonic() < DEADLINE:
        status, body = api(f"/api/submissions/{pk}", token)
        if body.get("status") == "running":
            seen = seen or time.monotonic()
            if time.monotonic() - seen > 20:
                break
        elif body.get("status") in ("done", "failed"):
            break
        time.sleep(0.5)
    before = gpu_apps()
    killed = [int(line.split()[0]) for line in _ps() if "celery" in line and " worker " in line]
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    boxes_at_kill = _boxes()
    time.sleep(5)
    record(out, stage="kill", id=pk, phase_at_kill=body.get("phase"), killed=killed, gpu_apps_before=before,
           gpu_apps_5s_after=gpu_apps(), boxes_at_kill=boxes_at_kill, boxes_5s_after=_boxes())


def _boxes() -> list[str]:
    """The processes of evaluations: bubblewrap, the judge and its runners."""
    return [line[:200] for line in _ps() if "bwrap" in line or "-m evaluator" in line]


def _ps() -> list[str]:
    return subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout.splitlines()[1:]


def _attempts(pk: int) -> dict:
    text = manage("shell", "-c", "from leaderboard.models import Submission as S; import json; "
                                 f"s=S.objects.get(pk={pk}); print(json.dumps(dict(attempts=s.attempts, "
                                 "results_stored=s.results_stored, worker=s.worker)))")
    return json.loads(text.strip().splitlines()[-1])


def export(out: Path) -> None:
    manage("export_results", "--out", str(out / "rows.json"))
    record(out, stage="export", bytes=(out / "rows.json").stat().st_size)


def calibrate(out: Path) -> None:
    """The ruler, `python3 -m evaluator calibrate --device cuda` on CAL_TASKS (default all five):
    its rows in OUT/calibrate-<first task>.json, lists that join into one ruler file."""
    names = os.environ.get("CAL_TASKS", " ".join(TASKS)).split()
    path = out / f"calibrate-{names[0]}.json"
    e = dict(os.environ)
    cache = ROOT / "var" / "sandbox" / "judge-cache"  # the site's, warmed by `make run`
    if cache.is_dir():
        e["EVALUATOR_JUDGE_CACHE"] = str(cache)
    busy = [line for line in _ps() if "celery" in line or "uvicorn" in line or "bwrap" in line]
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "evaluator", "calibrate", "--device", "cuda", "--json", str(path),
                        *[a for n in names for a in ("--task", n)]], cwd=ROOT, capture_output=True, text=True, env=e)
    record(out, stage="calibrate", tasks=names, rc=p.returncode, seconds=round(time.monotonic() - t, 1),
           judge_cache=e.get("EVALUATOR_JUDGE_CACHE", "default"), running_before=busy,
           table=p.stdout[-3000:], stderr=p.stderr[-1500:] if p.returncode else "")


def stop(out: Path) -> None:
    pid = int((STATE / "make-run.pid").read_text())
    try:
        os.killpg(pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    time.sleep(10)
    record(out, stage="stop", left=[line for line in _ps() if "celery" in line or "uvicorn" in line])


def table(out: Path) -> None:
    from datetime import datetime
    from statistics import median

    rows = [json.loads(line) for line in open(out / "records.jsonl")]
    runs = [r for r in rows if r.get("stage") == "queue" and "site" in r]
    at = lambda r, k: datetime.fromisoformat(r["detail"][k]).timestamp()  # noqa: E731
    runs.sort(key=lambda r: at(r, "started"))
    # upload to verdict from the site's own finish time: `collect` sees the uploads in the order
    # they were sent, so a later one that finished first is seen only after the one before it
    sent = {s["id"]: s["sent_at"] for r in rows if r.get("stage") == "queue" and "sent" in r for s in r["sent"]}
    for r in runs:
        r["upload_to_verdict_s"] = at(r, "finished") - sent[r["site"]["id"]]
        r["claim_to_verdict_s"] = at(r, "finished") - at(r, "started")
    print("| id | user | task | verdict | codes | vs torch.compile | vs eager | upload to verdict | claim to "
          "verdict | attempts |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        s, d = r["site"], r["detail"]
        print(f"| {s['id']} | {r['user']} | {r['task']} | {s['verdict']} | {', '.join(s['reason_codes']) or '-'} | "
              f"{s['speedup_vs_compile'] or 0:.3f} | {s['speedup_vs_eager'] or 0:.3f} | "
              f"{r['upload_to_verdict_s']:.1f} s | {r['claim_to_verdict_s']:.1f} s | {d['attempts']} |")
    print()
    for task in dict.fromkeys(r["task"] for r in runs):
        mine = [r for r in runs if r["task"] == task]
        if mine:
            up = [r["upload_to_verdict_s"] for r in mine]
            claim = [r["claim_to_verdict_s"] for r in mine]
            print(f"{task}: {len(mine)} runs, upload to verdict median {median(up):.1f} s max {max(up):.1f} s; "
                  f"claim to verdict median {median(claim):.1f} s max {max(claim):.1f} s")
    if len(runs) > 1:
        span = max(at(r, "finished") for r in runs) - min(at(r, "started") for r in runs)
        print(f"{len(runs)} evaluations in {span:.1f} s from the first claim to the last finish: "
              f"{60 * len(runs) / span:.2f} a minute")


STAGES = {"setup": setup, "start": start, "users": users, "examples": examples, "modes": modes, "cheats": cheats,
          "kb": kb, "kbcal": kbcal, "queue": queue, "collect": collect, "kill": kill,
          "export": export, "calibrate": calibrate, "stop": stop, "table": table}


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for stage in sys.argv[2:]:
        t = time.monotonic()
        try:
            STAGES[stage](out)
        except Exception as exc:  # noqa: BLE001 - one stage's failure is recorded, the next still runs
            record(out, stage=stage, failed=f"{type(exc).__name__}: {exc}")
        print(f"=== {stage}: {time.monotonic() - t:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
