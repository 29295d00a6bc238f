"""What a runner's process starts with (runner_process.runner_env): on the CPU glibc's malloc
thresholds are fixed, so that whether a call's fresh output pages fault in does not depend on the
process's history (docs/evaluator.md, the CPU ruler and glibc's malloc)."""
from evaluator.judge import runner_process
from evaluator.wire import workdir


def test_cpu_runners_fix_mallocs_thresholds_and_gpu_runners_leave_them():
    work = workdir.Workdir(b"")
    try:
        cpu = runner_process.runner_env(work, "cpu")
        cuda = runner_process.runner_env(work, "cuda")
    finally:
        work.remove()
    assert int(cpu["MALLOC_MMAP_THRESHOLD_"]) == 32 << 20  # glibc's largest: 1 MB outputs stay in the heap
    assert int(cpu["MALLOC_TRIM_THRESHOLD_"]) >= 1 << 30
    assert "MALLOC_MMAP_THRESHOLD_" not in cuda and "MALLOC_TRIM_THRESHOLD_" not in cuda


def test_every_runner_runs_torchs_cpu_work_on_one_thread():
    """A GPU runner too: a problem whose parameters are initialised on the CPU would otherwise
    start torch's thread pool, one thread per core, and the thread-count rule would flag it."""
    work = workdir.Workdir(b"")
    try:
        envs = [runner_process.runner_env(work, device) for device in ("cpu", "cuda")]
    finally:
        work.remove()
    assert [env["OMP_NUM_THREADS"] for env in envs] == ["1", "1"]
