"""What `make run` starts: the plan leaderboard/launch.py makes of nvidia-smi's output, and
scripts/run.sh reading it (RUN_PLAN_ONLY=1) with a stand-in nvidia-smi, since this machine has no
GPU. Also the modes of var/ that PostgreSQL, running as its own user, needs to reach its data."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboard import launch

ROOT = Path(__file__).resolve().parents[2]

# what `nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader` prints on a mixed host
MIXED = """0, NVIDIA H200, GPU-5b1c3f6e-0f0e-4a55-9a3c-1d2e3f405162
1, NVIDIA H200, GPU-7a8b9c0d-1e2f-4a3b-8c4d-5e6f70819203
2, NVIDIA A100-SXM4-80GB, GPU-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9
"""
TWO_H200 = "\n".join(MIXED.splitlines()[:2]) + "\n"


def test_one_worker_per_gpu_of_the_site_model_on_one_queue():
    plan = launch.plan(launch.parse_gpus(MIXED))
    assert plan.device_type == "cuda:NVIDIA H200"
    assert plan.env == {"WORKER_DEVICE": "cuda", "WORKER_GPU_NAME": "NVIDIA H200",
                        "EVAL_QUEUE": "eval-cuda-nvidia-h200"}
    assert [(w.node, w.log, w.env) for w in plan.workers] == [
        ("worker-gpu0@%h", "var/worker-gpu0.log", {"WORKER_GPU_INDEX": "0"}),
        ("worker-gpu1@%h", "var/worker-gpu1.log", {"WORKER_GPU_INDEX": "1"}),
    ]
    assert [g.name for g in plan.idle] == ["NVIDIA A100-SXM4-80GB"]
    assert plan.ruler == Path("bench/results/calibration/h200.json")


def test_without_a_gpu_one_cpu_worker_as_before():
    plan = launch.plan(launch.parse_gpus(""))
    assert plan.device_type == "cpu" and plan.env["EVAL_QUEUE"] == "eval-cpu" and plan.ruler is None
    assert [(w.node, w.log, w.env) for w in plan.workers] == [("worker-eval-cpu@%h", "var/worker.log", {})]


def test_the_ruler_file_is_the_whole_model_name():
    assert launch.ruler_file("NVIDIA H200").name == "h200.json"
    assert launch.ruler_file("NVIDIA H100 80GB HBM3").name == "h100-80gb-hbm3.json"
    assert launch.ruler_file("NVIDIA H100 PCIe").name == "h100-pcie.json"
    assert launch.ruler_file("NVIDIA GeForce RTX 4090").name == "geforce-rtx-4090.json"


def test_what_is_not_nvidia_smi_output_is_refused():
    with pytest.raises(ValueError, match="not a line of nvidia-smi"):
        launch.parse_gpus("No devices were found\n")


def test_the_beat_and_the_site_send_to_the_queue_the_workers_consume():
    """In a process with the plan's env (as run.sh exports it): uploads of the site's device type
    and the beat's periodic jobs go to the workers' queue."""
    plan = launch.plan(launch.parse_gpus(TWO_H200))
    code = ("import django; django.setup()\n"
            "from leaderboard import routing, tasks\n"
            "print(routing.default_device_type())\n"
            "print(routing.eval_queue_for(routing.default_device_type()))\n"
            "print(sorted({e['options']['queue'] for e in tasks.app.conf.beat_schedule.values()}))\n")
    env = {**os.environ, **plan.env, "DJANGO_SETTINGS_MODULE": "leaderboard.settings"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["cuda:NVIDIA H200", "eval-cuda-nvidia-h200", "['eval-cuda-nvidia-h200']"]


def _checkout(tmp_path: Path, script: str) -> Path:
    """A copy of scripts/<script> in a checkout of its own whose var/ an earlier run left 0700."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / script, tmp_path / "scripts" / script)
    for name in (".venv", "leaderboard"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "var").mkdir(mode=0o700)
    return tmp_path


def _run_plan(checkout: Path, nvidia_smi: str | None, **env) -> subprocess.CompletedProcess:
    bin_dir = checkout / "stand-in-bin"
    bin_dir.mkdir(exist_ok=True)
    if nvidia_smi is not None:
        (bin_dir / "nvidia-smi").write_text("#!/bin/sh\n" + nvidia_smi)
        (bin_dir / "nvidia-smi").chmod(0o755)
    inherited = {k: v for k, v in os.environ.items() if k != "WORKER_DEVICE"}
    env = {**inherited, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RUN_PLAN_ONLY": "1", **env}
    return subprocess.run(["bash", "-c", "umask 077; exec scripts/run.sh"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60)


def test_run_sh_plans_a_worker_per_gpu_and_leaves_var_traversable(tmp_path):
    checkout = _checkout(tmp_path, "run.sh")
    lines = "".join(f"echo '{line}'\n" for line in TWO_H200.splitlines())
    out = _run_plan(checkout, lines)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "GPU 0 NVIDIA H200: worker worker-gpu0@%h on queue eval-cuda-nvidia-h200 (log var/worker-gpu0.log)",
        "GPU 1 NVIDIA H200: worker worker-gpu1@%h on queue eval-cuda-nvidia-h200 (log var/worker-gpu1.log)",
        "ruler for NVIDIA H200: bench/results/calibration/h200.json ("
        + ("committed" if (ROOT / "bench/results/calibration/h200.json").is_file() else "not published") + ")",
        "beat: one scheduler for the periodic jobs, sent to queue eval-cuda-nvidia-h200 (log var/beat.log)",
        "site: uploads, the home page and the boards are on NVIDIA H200",
    ]
    # under umask 077 and after a run that left it 0700, PostgreSQL's user can still pass through
    assert (checkout / "var").stat().st_mode & 0o777 == 0o711


@pytest.mark.parametrize("nvidia_smi, env", [
    ("echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9", {}),
    (None, {}),  # none on PATH but the system's, which this machine lacks
    ("echo '0, NVIDIA H200, GPU-5b1c'", {"WORKER_DEVICE": "cpu"}),  # asked for the CPU
])
def test_run_sh_falls_back_to_the_cpu(tmp_path, nvidia_smi, env):
    if nvidia_smi is None and shutil.which("nvidia-smi"):
        pytest.skip("this machine has an nvidia-smi")
    out = _run_plan(_checkout(tmp_path, "run.sh"), nvidia_smi, **env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == ("no NVIDIA GPU (or WORKER_DEVICE=cpu): one worker on the CPU, "
                                          "worker-eval-cpu@%h on queue eval-cpu (log var/worker.log)")


def test_services_sh_makes_var_traversable_for_postgres(tmp_path):
    checkout = _checkout(tmp_path, "services.sh")
    out = subprocess.run(["bash", "-c", "umask 077; exec scripts/services.sh env"], cwd=checkout,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for path in (checkout / "var", checkout / "var" / "services"):
        assert path.stat().st_mode & 0o777 == 0o711, path
