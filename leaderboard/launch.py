"""What `make run` starts on this machine (scripts/run.sh): one worker per NVIDIA GPU, or one
CPU worker when there is none.

run.sh asks `nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader` and pipes its output to
`python -m leaderboard.launch`, which prints the plan as shell assignments for run.sh to `eval`
(every value quoted with shlex.quote) and, in PLAN, as lines for people.

A site has one device type: its uploads, home page and default boards are that device type's.
On a GPU host it is "cuda:<name of GPU 0's model>"; GPUs of another model get no worker, since no
upload would ever be sent to their queue. Every worker of the model consumes one queue, so an
evaluation goes to whichever GPU is free.
"""
from __future__ import annotations

import csv
import io
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from leaderboard.routing import queue_name

ROOT = Path(__file__).resolve().parent.parent
# The committed rulers, one file per GPU model (bench/judge_clock.py writes them)
RULER_DIR = Path("bench/results/calibration")


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str = ""


@dataclass(frozen=True)
class Worker:
    node: str  # celery's -n; the node name is how a restarted worker finds its own lost rows
    log: str
    gpu: Gpu | None  # None: the CPU worker

    @property
    def env(self) -> dict[str, str]:
        """What this worker's process has on top of the plan's env."""
        return {"WORKER_GPU_INDEX": str(self.gpu.index)} if self.gpu else {}


@dataclass(frozen=True)
class Plan:
    device_type: str
    env: dict[str, str]  # every process's: web server, beat, workers, warm-up, ruler import
    workers: list[Worker]
    idle: list[Gpu]  # GPUs of another model than the site's
    ruler: Path | None  # where this GPU model's ruler is committed when there is one


def parse_gpus(text: str) -> list[Gpu]:
    """The GPUs in nvidia-smi's CSV ("0, NVIDIA H200, GPU-..."), by index. ValueError on a line
    that is not one."""
    gpus = []
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2 or not row[0].strip().isdigit() or not row[1].strip():
            raise ValueError(f"not a line of nvidia-smi --query-gpu=index,name,uuid: {', '.join(row)!r}")
        gpus.append(Gpu(int(row[0]), row[1].strip(), row[2].strip() if len(row) > 2 else ""))
    return sorted(gpus, key=lambda g: g.index)


def ruler_file(gpu_name: str) -> Path:
    """Where the ruler of a GPU model is committed: its name as nvidia-smi prints it without a
    leading "NVIDIA", lower case, each run of other characters one "-". "NVIDIA H200" ->
    h200.json, "NVIDIA H100 80GB HBM3" -> h100-80gb-hbm3.json: the whole name, because the PCIe
    and SXM boards of one chip run at different speeds and need rulers of their own."""
    name = re.sub(r"^nvidia\s+", "", gpu_name.strip().lower())
    slug = "-".join(part for part in re.split(r"[^a-z0-9]+", name) if part)
    return RULER_DIR / f"{slug}.json"


def plan(gpus: list[Gpu]) -> Plan:
    if not gpus:
        # one CPU worker, named as before per-GPU workers existed so that its lost rows are found
        env = {"WORKER_DEVICE": "cpu", "WORKER_GPU_NAME": "", "EVAL_QUEUE": queue_name("cpu")}
        return Plan("cpu", env, [Worker(f"worker-{env['EVAL_QUEUE']}@%h", "var/worker.log", None)], [], None)
    model = gpus[0].name
    device_type = f"cuda:{model}"
    env = {"WORKER_DEVICE": "cuda", "WORKER_GPU_NAME": model, "EVAL_QUEUE": queue_name(device_type)}
    workers = [Worker(f"worker-gpu{g.index}@%h", f"var/worker-gpu{g.index}.log", g) for g in gpus if g.name == model]
    idle = [g for g in gpus if g.name != model]
    return Plan(device_type, env, workers, idle, ruler_file(model))


def describe(p: Plan, root: Path = ROOT) -> list[str]:
    """The plan in lines for people, as run.sh prints it before starting anything."""
    queue = p.env["EVAL_QUEUE"]
    if not p.workers[0].gpu:
        cpu = p.workers[0]
        lines = [f"no NVIDIA GPU (or WORKER_DEVICE=cpu): one worker on the CPU, {cpu.node} on queue {queue} "
                 f"(log {cpu.log})"]
    else:
        lines = [f"GPU {w.gpu.index} {w.gpu.name}: worker {w.node} on queue {queue} (log {w.log})"
                 for w in p.workers]
        lines += [f"GPU {g.index} {g.name}: no worker, this site evaluates on {p.env['WORKER_GPU_NAME']}"
                  for g in p.idle]
        published = "committed" if (root / p.ruler).is_file() else "not published"
        lines.append(f"ruler for {p.env['WORKER_GPU_NAME']}: {p.ruler} ({published})")
    lines.append(f"beat: one scheduler for the periodic jobs, sent to queue {queue} (log var/beat.log)")
    lines.append(f"site: uploads, the home page and the boards are on {p.env['WORKER_GPU_NAME'] or 'the CPU'}")
    return lines


def shell(p: Plan, notes: list[str] = ()) -> str:
    """The plan as bash assignments; run.sh exports SITE_ENV to every process it starts."""
    def array(values) -> str:
        return "(" + " ".join(shlex.quote(str(v)) for v in values) + ")"

    return "\n".join([
        f"SITE_DEVICE_TYPE={shlex.quote(p.device_type)}",
        "SITE_ENV=" + array(f"{k}={v}" for k, v in p.env.items()),
        "WORKER_NODES=" + array(w.node for w in p.workers),
        "WORKER_LOGS=" + array(w.log for w in p.workers),
        "WORKER_GPUS=" + array("" if w.gpu is None else w.gpu.index for w in p.workers),
        f"RULER={shlex.quote(str(p.ruler or ''))}",
        "PLAN=" + array([*notes, *describe(p)]),
    ]) + "\n"


def main() -> int:
    notes = []
    try:
        gpus = parse_gpus(sys.stdin.read())
    except ValueError as exc:
        gpus = []
        notes.append(f"cannot read the GPUs ({exc}): running on the CPU")
    sys.stdout.write(shell(plan(gpus), notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
