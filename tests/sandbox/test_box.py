"""The box itself, seen from the judge's seat (a root command run directly in it), and the host-side
plumbing: backend choice, cleanup, reading the report, the GPU checks, the image build context."""
from __future__ import annotations

import io
import json
import os
import secrets
import sys
import tarfile
import time

import pytest

import sandbox
from evaluator import upload_size_problem
from sandbox import Limits, SandboxError, box, cgroup, cleanup, docker_backend, gpu, image, result

from sandbox_helpers import IN_CI, LIMITS, WRONG, evaluate

PROBE = r"""
import glob, os, socket
print("status", [l for l in open("/proc/self/status").read().splitlines()
                 if l.split(":")[0] in ("Uid", "CapEff", "CapBnd", "NoNewPrivs")])
env = b""
for path in glob.glob("/proc/[0-9]*/environ"):
    env += open(path, "rb").read()
print("environ", env)
for path in ("/judge-planted", "/usr/judge-planted", "/out/judge-planted", "/tmp/judge-planted"):
    try:
        open(path, "w").write("x")
        print("write", path, "ok")
    except OSError as e:
        print("write", path, type(e).__name__)
st = os.statvfs("/tmp")
print("tmp_bytes", st.f_blocks * st.f_frsize)
print("netdevs", sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]))
print("hostname", socket.gethostname())
print("nvidia", glob.glob("/dev/nvidia*"))
print("etc", sorted(os.listdir("/etc")))
# host-global sysctls: uid 0 needs no capability to write them, only a writable /proc/sys.
# The probe writes back the value it read, so even a failing test changes nothing on the host.
for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/overcommit_memory"):
    try:
        value = open(path).read()
        with open(path, "w") as f:
            f.write(value)
        print("sysctl", path, "writable")
    except OSError as e:
        print("sysctl", path, type(e).__name__)
"""


def run_probe(backend_name: str, code: str, limits: Limits = LIMITS, *, keep_box=None, device="cpu"):
    backend = sandbox.BACKENDS[backend_name]
    made = sandbox.make_box(backend, source=b"", device=device, limits=limits,
                            argv_for=lambda python: [python, "-c", code])
    if keep_box is not None:
        keep_box.append(made)
    try:
        return backend.run(made)
    finally:
        box.remove_workdir(made.workdir)


def parse_probe(logs: str) -> dict:
    found = {}
    for line in logs.splitlines():
        key, _, value = line.partition(" ")
        found.setdefault(key, []).append(value)
    return found


def test_judge_seat_has_three_caps_no_secrets_and_a_read_only_root(backend, monkeypatch):
    canary = "canary-" + secrets.token_hex(8)
    monkeypatch.setenv("SECRET_KEY", canary)
    monkeypatch.setenv("DATABASE_URL", f"postgres://{canary}@db/x")
    outcome = run_probe(backend, PROBE)
    assert outcome.exit_code == 0, outcome.logs
    found = parse_probe(outcome.logs)
    status = found["status"][0]
    assert "'Uid:\\t0\\t0\\t0\\t0'" in status
    # CAP_KILL (5), CAP_SETGID (6), CAP_SETUID (7) and nothing else
    assert "'CapEff:\\t00000000000000e0'" in status
    assert "'NoNewPrivs:\\t1'" in status
    assert canary not in outcome.logs and "SECRET_KEY" not in outcome.logs
    assert "TMPDIR=/tmp" in found["environ"][0]
    writes = dict(w.split(" ", 1) for w in found["write"])
    assert writes["/judge-planted"] == "OSError" or writes["/judge-planted"].endswith("Error")
    assert writes["/usr/judge-planted"] != "ok"
    assert writes["/out/judge-planted"] == "ok"
    assert writes["/tmp/judge-planted"] == "ok"
    assert int(found["tmp_bytes"][0]) <= LIMITS.tmpfs_bytes
    assert found["netdevs"][0] == "['lo']"
    assert found["hostname"][0] == "sandbox"
    assert found["nvidia"][0] == "[]"
    assert "shadow" not in found["etc"][0]
    assert len(found["sysctl"]) == 2
    assert not any(line.endswith("writable") for line in found["sysctl"]), found["sysctl"]


def test_the_loader_cache_is_found_by_its_sbin_path(backend):
    """Triton finds libcuda through `/sbin/ldconfig -p`, and ctypes.util.find_library the same way:
    the box has that path on both backends, also where /sbin is a link on the host."""
    code = ("import ctypes.util, subprocess\n"
            "out = subprocess.run(['/sbin/ldconfig', '-p'], capture_output=True, text=True)\n"
            "print('rc', out.returncode, 'libs', out.stdout.count('=>'))\n"
            "print('libc', ctypes.util.find_library('c'))\n")
    outcome = run_probe(backend, code)
    assert outcome.exit_code == 0, outcome.logs
    found = parse_probe(outcome.logs)
    rc, _, libs = found["rc"][0].split()
    assert rc == "0" and int(libs) > 0, outcome.logs
    assert found["libc"][0].startswith("libc.so"), outcome.logs


def test_the_box_leaves_nothing_behind(backend):
    made = []
    outcome = run_probe(backend, "print('hello')", keep_box=made)
    assert outcome.exit_code == 0
    assert "hello" in outcome.logs
    assert not made[0].workdir.exists()
    if backend == "docker":
        label = f"{docker_backend.RUN_LABEL}={made[0].run_id}"
        assert docker_backend.client().containers.list(all=True, filters={"label": label}) == []
    else:
        assert not [p for p in cgroup.stale_groups() if p.name == made[0].run_id]


def test_no_report_is_the_judges_failure_not_a_verdict(backend):
    # the judge writes a report whenever the evaluation completes: without one, the judge (or its
    # checker or baseline runner) failed, which the site retries instead of blaming the upload
    outcome = run_probe(backend, "import sys; print('bye'); sys.exit(3)")
    assert outcome.exit_code == 3
    with pytest.raises(SandboxError, match="the judge failed") as info:
        result.decide(outcome, "/nonexistent/report.json", task="softmax", mode="test",
                      device="cpu", time_limit_s=60, report_bytes=1000)
    assert "bye" in str(info.value)
    outcome = run_probe(backend, "import sys; sys.exit(1)")
    with pytest.raises(SandboxError, match=r"without a report \(exit status 1\)"):
        result.decide(outcome, "/nonexistent/report.json", task="softmax", mode="test",
                      device="cpu", time_limit_s=60, report_bytes=1000)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to narrow to one")
def test_a_worker_pinned_to_one_core_keeps_its_box_there(backend):
    """A worker started under `taskset` (or the serial part of `make test`, one core per worker)
    runs its boxes on its cores only, and their torch on that many threads."""
    before = os.sched_getaffinity(0)
    core = max(before)
    os.sched_setaffinity(0, {core})
    try:
        code = "import os; print('cores', sorted(os.sched_getaffinity(0))); print('omp', os.environ['OMP_NUM_THREADS'])"
        out = run_probe(backend, code)
    finally:
        os.sched_setaffinity(0, before)
    got = parse_probe(out.logs)
    assert got["cores"] == [f"[{core}]"] and got["omp"] == ["1"], out.logs


def test_overhead_is_measured(backend):
    res = evaluate(backend, WRONG)
    assert res.backend == backend
    assert 0 < res.overhead_s < res.wall_s
    assert res.overhead_s < 5
    # the report's time split carries it, next to the evaluation's own phases
    assert res.report.phases.sandbox_s == pytest.approx(res.overhead_s, abs=1e-3)


# ---- choosing a backend ----------------------------------------------------------------------
def test_unknown_backend_is_refused():
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        sandbox.choose_backend("chroot")


def test_without_any_sandbox_evaluation_is_refused_with_what_to_install(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("SANDBOX_BACKEND", raising=False)
    monkeypatch.setattr(docker_backend, "_client", None)
    with pytest.raises(SandboxError) as info:
        sandbox.evaluate(source=WRONG.encode(), task="softmax", mode="test", device="cpu")
    assert "apt-get install docker.io" in str(info.value)
    assert "bubblewrap" in str(info.value)
    monkeypatch.setattr(docker_backend, "_client", None)


def test_env_chooses_the_backend(monkeypatch):
    monkeypatch.setenv("SANDBOX_BACKEND", "bwrap")
    if sandbox.bwrap_backend.unavailable_reason():
        with pytest.raises(SandboxError):
            sandbox.choose_backend()
    else:
        assert sandbox.choose_backend() is sandbox.bwrap_backend


def test_bad_requests_never_reach_a_box():
    with pytest.raises(ValueError):
        sandbox.evaluate(source=b"x", task="../etc", mode="test", device="cpu")
    with pytest.raises(ValueError):
        sandbox.evaluate(source=b"x", task="softmax", mode="fast", device="cpu")


def test_a_huge_upload_is_rejected_without_running(backend):
    res = sandbox.evaluate(source=b"#" * (sandbox.MAX_UPLOAD_BYTES + 1), task="softmax",
                           mode="test", device="cpu", backend=backend)
    assert res.report.reason_codes == ("bad_upload",)
    # the judge's own words for it (evaluator.check_upload), with no box made
    assert res.report.reasons == (upload_size_problem(sandbox.MAX_UPLOAD_BYTES + 1)[1],)
    assert res.wall_s == 0.0


def test_a_missing_production_image_is_a_sandbox_error(monkeypatch, docker_ready):
    monkeypatch.setenv("SANDBOX_IMAGE", "kernelboard-sandbox:does-not-exist")
    with pytest.raises(SandboxError, match="build-image"):
        evaluate("docker", WRONG)


# ---- cleanup ---------------------------------------------------------------------------------
def test_cleanup_removes_only_stale_containers(docker_ready):
    engine = docker_backend.client()
    runtime = image.docker_runtime(engine)
    made = []
    for deadline in (time.time() - 3600, time.time() + 3600):
        made.append(engine.containers.create(
            runtime.image, ["/usr/bin/sleep", "600"], network_mode="none",
            labels={box.LABEL: "1", docker_backend.DEADLINE_LABEL: str(int(deadline))}))
    stale, live = made
    try:
        removed = cleanup.docker_stragglers(time.time())
        assert stale.id[:12] in removed
        assert live.id[:12] not in removed
        live.reload()
    finally:
        for c in made:
            try:
                c.remove(force=True)
            except Exception:
                pass


def test_cleanup_removes_stale_cgroups_and_workdirs(bwrap_ready, tmp_path, monkeypatch):
    old = f"{int(time.time()) - 3600}-{secrets.token_hex(4)}"
    new = f"{int(time.time()) + 3600}-{secrets.token_hex(4)}"
    groups = [cgroup.Cgroup.create(name, LIMITS) for name in (old, new)]
    if groups[0] is None:
        (pytest.fail if IN_CI else pytest.skip)("no writable cgroup hierarchy here")
    try:
        removed = cleanup.cgroup_stragglers(time.time())
        assert any(p.endswith(old) for p in removed)
        assert not any(p.endswith(new) for p in removed)
    finally:
        for g in groups:
            g.remove()
    monkeypatch.setenv("SANDBOX_WORK_DIR", str(tmp_path))
    stale = box.make_workdir(b"x", deadline=time.time() - 3600)
    fresh = box.make_workdir(b"x", deadline=time.time() + 3600)
    cleanup.workdir_stragglers(time.time())
    assert not stale.exists() and fresh.exists()


# ---- the report, read as untrusted data ------------------------------------------------------
def _outcome(**kw):
    base = dict(exit_code=0, timed_out=False, oom_killed=False, logs="box logs", wall_s=1.0, payload_s=0.5)
    return box.Outcome(**{**base, **kw})


def _decide(outcome, path) -> dict:
    """The report decide returns (an evaluator.Report), as the JSON the site stores."""
    return result.decide(outcome, str(path), task="softmax", mode="test", device="cpu",
                         time_limit_s=300, report_bytes=10_000).to_json()


def _good(**kw):
    report = {"schema": 1, "verdict": "verified", "reasons": [], "reason_codes": [], "task": "softmax",
              "mode": "test", "device": "cpu", "logs": ""}
    return {**report, **kw}


def test_a_good_report_is_kept(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_good()))
    assert _decide(_outcome(), path)["verdict"] == "verified"


def test_timeout_and_oom_win_over_any_report(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_good()))
    report = _decide(_outcome(timed_out=True, exit_code=None), path)
    assert report["reasons"] == ["time limit 300 s exceeded"] and report["reason_codes"] == ["timeout"]
    report = _decide(_outcome(oom_killed=True), path)
    assert report["reasons"] == ["out of memory"] and report["reason_codes"] == ["out_of_memory"]


@pytest.mark.parametrize("content", [
    b"{", b"[]", b'{"schema": 1, "verdict": "verified"}', json.dumps(_good(verdict="great")).encode(),
    json.dumps(_good(task="layernorm")).encode(), json.dumps(_good(mode="ranked")).encode(),
    b'{"schema": NaN}',
    json.dumps(_good(logs="x" * 20_000)).encode(),
])
def test_unusable_reports_are_rejected_not_trusted(tmp_path, content):
    path = tmp_path / "report.json"
    path.write_bytes(content)
    report = _decide(_outcome(), path)
    assert report["verdict"] == "rejected"
    assert report["reason_codes"] == ["sandbox"]


def test_a_symlinked_or_fifo_report_is_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(json.dumps(_good()))
    link = tmp_path / "link.json"
    link.symlink_to(secret)
    assert _decide(_outcome(), link)["reason_codes"] == ["sandbox"]
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert _decide(_outcome(), fifo)["reason_codes"] == ["sandbox"]
    assert time.monotonic() - started < 1


def test_usage_error_without_report_is_a_sandbox_error(tmp_path):
    with pytest.raises(SandboxError):
        _decide(_outcome(exit_code=2), tmp_path / "missing.json")


def test_logs_are_cut_to_the_limit():
    keeper = box.OutputKeeper(64 * 1024)
    for _ in range(1000):
        keeper.feed(b"z" * 10_000)
    text = keeper.text()
    assert len(text.encode()) <= 64 * 1024
    assert "bytes of output cut" in text


# ---- limits, GPU, image ------------------------------------------------------------------------
def test_limits_from_env():
    limits = Limits.from_env({"SANDBOX_MEMORY": "3G", "SANDBOX_TIME_LIMIT": "42", "SANDBOX_GPU": "2"})
    assert limits.memory_bytes == 3 * 1024**3 and limits.time_limit_s == 42 and limits.gpu_index == 2
    with pytest.raises(SandboxError):
        Limits.from_env({"SANDBOX_PIDS": "many"})
    with pytest.raises(ValueError):
        Limits(memory_bytes=0)


def test_a_gpu_box_is_told_which_host_gpu_it_was_given_and_sees_it_as_device_0():
    """Two workers on two GPUs: each box gets its own device file and calls it cuda:0; the judge
    reports the host's index from EVALUATOR_HOST_GPU, which only the box's environment sets."""
    second = box.box_env(device="cuda", limits=Limits(gpu_index=1), host_env={"EVALUATOR_HOST_GPU": "7"})
    assert (second["CUDA_VISIBLE_DEVICES"], second["EVALUATOR_HOST_GPU"]) == ("0", "1")
    assert box.box_env(device="cuda", limits=Limits(), host_env={})["EVALUATOR_HOST_GPU"] == "0"
    assert "EVALUATOR_HOST_GPU" not in box.box_env(device="cpu", limits=Limits(gpu_index=1), host_env={})


def test_only_the_operators_evaluator_settings_cross_into_the_box():
    """The worker's quick mode and CPU rounds budget reach the judge in the box (a budget set on the
    worker and dropped at the box's edge would leave the site on 30 s whatever the operator said);
    the worker's secrets and any other variable do not."""
    host = {"EVALUATOR_QUICK": "1", "EVALUATOR_CPU_ROUNDS_S": "12", "SECRET_KEY": "s",
            "DATABASE_URL": "postgres://x", "EVALUATOR_SAMPLES_DIR": "/tmp/x"}
    env = box.box_env(device="cpu", limits=Limits(), host_env=host)
    assert (env["EVALUATOR_QUICK"], env["EVALUATOR_CPU_ROUNDS_S"]) == ("1", "12")
    assert not {"SECRET_KEY", "DATABASE_URL", "EVALUATOR_SAMPLES_DIR"} & set(env)


@pytest.mark.gpu
def test_a_cuda_box_sees_exactly_one_gpu(backend):
    import subprocess

    from evaluator.judge.startup import gpu_uuid

    outcome = run_probe(backend, "import os, torch; from evaluator.judge.startup import gpu_uuid; "
                                 "print('gpus', torch.cuda.device_count(), gpu_uuid(0), "
                                 "os.environ['EVALUATOR_HOST_GPU'])", device="cuda")
    assert outcome.exit_code == 0, outcome.logs
    assert "gpus 1 " in outcome.logs
    # the UUID the judge reports is the one nvidia-smi gives the host's GPU of that index
    index = LIMITS.gpu_index or 0
    listed = dict(line.split(", ") for line in subprocess.run(
        ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True, text=True,
        check=True).stdout.splitlines())
    assert f"gpus 1 {listed[str(index)]} {index}" in outcome.logs, (outcome.logs, listed)
    assert gpu_uuid(0).startswith("GPU-")


def test_gpu_out_of_service_flag(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_STATE_DIR", str(tmp_path))
    gpu.check_in_service(3)
    gpu.mark_out_of_service(3, "test")
    with pytest.raises(SandboxError, match="out of service"):
        gpu.check_in_service(3)


def test_gpu_held_by_a_process_is_taken_out_of_service(tmp_path, monkeypatch):
    # nvidia-smi cannot run on this machine; this script prints what it prints for a busy GPU
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho '4242, python, 1024 MiB'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("SANDBOX_STATE_DIR", str(tmp_path / "state"))
    with pytest.raises(SandboxError, match="taken out of service"):
        gpu.ensure_idle(0, "before")
    assert "4242" in gpu.flag_path(0).read_text()
    smi.write_text("#!/bin/sh\nexit 0\n")
    gpu.ensure_idle(1, "after", settle_s=0)


def test_gpu_parse_and_missing_nodes():
    assert gpu.parse_compute_apps("No running processes found\n") == []
    assert gpu.parse_compute_apps("1, a, 2 MiB\n\n3, b, 4 MiB\n") == ["1, a, 2 MiB", "3, b, 4 MiB"]
    if not os.path.exists("/dev/nvidia0"):
        with pytest.raises(SandboxError, match="missing device nodes"):
            gpu.device_nodes(0)


def test_nsight_compute_outside_the_runtime_binds_is_bound_read_only(tmp_path):
    """Nsight Compute under /opt/nvidia (outside /usr) goes into a GPU box at its own path; one the
    runtime already shows, or one that is absent, adds nothing."""
    install = tmp_path / "opt" / "nvidia" / "nsight-compute"
    install.mkdir(parents=True)
    binds = gpu.tool_binds(["/usr"], dirs=(str(install), str(tmp_path / "absent")))
    assert [(b.source, b.target) for b in binds] == [(str(install), str(install))]
    assert gpu.tool_binds([str(tmp_path / "opt")], dirs=(str(install),)) == []


def test_the_nvidia_runtime_plan_carries_the_tools_and_no_library_path(tmp_path, monkeypatch):
    install = tmp_path / "nsight-compute"
    install.mkdir()
    monkeypatch.setattr(gpu, "TOOL_DIRS", (str(install),))
    plan = gpu.plan(0, runtime_binds=(), nvidia_runtime=True)
    assert plan.docker_request and [b.target for b in plan.lib_binds] == [str(install)]
    # LD_LIBRARY_PATH points at bound driver libraries only: a tools' bind alone sets nothing
    assert not any(b.target.startswith(gpu.LIBS_INSIDE + "/") for b in plan.lib_binds)


def test_build_context_holds_only_the_dockerfile_and_the_evaluator():
    with tarfile.open(fileobj=io.BytesIO(image.build_context())) as tar:
        names = tar.getnames()
    assert "Dockerfile" in names
    assert all(n == "Dockerfile" or n.startswith("evaluator") for n in names)
    assert not any("__pycache__" in n for n in names)
    first = next(l for l in image.DOCKERFILE.read_text().splitlines() if l.startswith("FROM"))
    assert "@sha256:" in first and len(first.split("@sha256:")[1]) == 64


def test_host_runtime_binds_no_project_and_no_root_home():
    runtime = image.host_runtime()
    sources = [b.source for b in runtime.binds]
    project = str(image.PROJECT_ROOT)
    for source in sources:
        assert source not in ("/", "/root", "/etc", project, "/var", "/home")
        assert not source.startswith(project + "/") or source in (
            str(image.evaluator_source()), os.path.realpath(sys.prefix))
    assert not any(s.endswith("docker.sock") for s in sources)


def test_a_work_directory_is_private_to_the_worker(tmp_path, monkeypatch):
    """0700 on the host: no other local user reads an upload or a report. The parts the box mounts
    keep the modes the box needs (the runner reads the upload)."""
    monkeypatch.setenv("SANDBOX_WORK_DIR", str(tmp_path / "work"))
    made = box.make_workdir(b"secret kernel", deadline=time.time() + 60)
    try:
        assert made.stat().st_mode & 0o777 == 0o700
        assert (tmp_path / "work").stat().st_mode & 0o777 == 0o700
        assert (made / "submission").stat().st_mode & 0o777 == 0o755
        assert (made / "submission" / "submission.py").stat().st_mode & 0o777 == 0o644
        assert (made / "out").stat().st_mode & 0o777 in (0o700, 0o770)
    finally:
        box.remove_workdir(made)
