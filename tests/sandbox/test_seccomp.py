"""The box's seccomp filter (sandbox/seccomp.py) on both backends: every call it denies fails
inside the box, from the judge's seat (root in the box) and from the submission's (uid 65534,
through the real evaluator), while an honest evaluation still passes. The committed BPF program is
what the policy compiles to, and the policy keeps to Docker's default plus its additions."""
from __future__ import annotations

import json
import platform

import pytest

import sandbox
from sandbox import box, seccomp

from sandbox_helpers import HONEST, IN_CI, LIMITS, evaluate, everything
from seccomp_probe import NUMBERS_X86_64, parse, probe_source, problems

# the calls Docker's default profile allows a container with the judge's capabilities, which the
# box's policy denies on top (with the ones Docker denies too, they are all in seccomp.DENIED)
BEYOND_DOCKER = {"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
                 "io_uring_register"}


def run_in_box(backend_name: str, code: str):
    backend = sandbox.BACKENDS[backend_name]
    made = sandbox.make_box(backend, source=b"", device="cpu", limits=LIMITS,
                            argv_for=lambda python: [python, "-c", code])
    try:
        return backend.run(made)
    finally:
        box.remove_workdir(made.workdir)


# ---- the policy ---------------------------------------------------------------------------------
def test_the_policy_denies_what_it_names_and_allows_the_rest_explicitly():
    assert not set(seccomp.ALLOWED) & set(seccomp.DENIED)
    assert BEYOND_DOCKER <= set(seccomp.DENIED)
    for name in ("unshare", "setns", "mount", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
                 "ptrace", "kexec_load", "kexec_file_load", "io_uring_setup"):
        assert name in seccomp.DENIED
    # what CUDA, torch and the evaluator rely on
    for name in ("ioctl", "mmap", "mprotect", "madvise", "memfd_create", "futex", "sendmsg", "recvmsg",
                 "socketpair", "setuid", "setgid", "setgroups", "kill", "tgkill", "wait4", "prctl",
                 "sched_setaffinity", "eventfd2", "epoll_wait", "execve", "shmget", "mremap"):
        assert name in seccomp.ALLOWED
    assert set(seccomp.DENIED) | {"clone", "clone3"} == set(NUMBERS_X86_64)


def test_the_docker_profile_is_the_same_policy():
    profile = json.loads(seccomp.docker_profile())
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO" and profile["defaultErrnoRet"] == 1
    allowed = {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" and "args" not in rule
               for n in rule["names"]}
    assert allowed == set(seccomp.ALLOWED)
    clone = [r for r in profile["syscalls"] if r["names"] == ["clone"]][0]
    assert clone["args"] == [{"index": 0, "op": "SCMP_CMP_MASKED_EQ", "value": 0x7E020000, "valueTwo": 0}]
    assert [r for r in profile["syscalls"] if r["names"] == ["clone3"]][0]["errnoRet"] == 38
    assert all(a["subArchitectures"] == [] for a in profile["archMap"])
    committed = (seccomp.HERE / "docker-profile.json").read_text()
    assert committed == seccomp.docker_profile() + "\n", "run `python -m sandbox seccomp-build`"


def libseccomp():
    """pyseccomp (requirements-test.txt) over the system's libseccomp2; under CI=true a must."""
    try:
        import pyseccomp
    except (ImportError, OSError):
        pyseccomp = None
    if pyseccomp is None:
        (pytest.fail if IN_CI else pytest.skip)("pyseccomp and libseccomp2 are not installed")
    return pyseccomp


def test_the_committed_bpf_program_is_what_the_policy_compiles_to():
    libseccomp()
    assert seccomp.bpf_program() == seccomp.compile_bpf(platform.machine()), \
        "the policy changed: run `python -m sandbox seccomp-build` and commit sandbox/filters/"


def test_the_probe_numbers_are_the_kernels():
    sc = libseccomp()
    for name, number in NUMBERS_X86_64.items():
        assert sc.resolve_syscall(sc.Arch.X86_64, name) == number, name


# ---- inside the box -----------------------------------------------------------------------------
def test_every_denied_call_fails_in_the_judges_seat(backend):
    outcome = run_in_box(backend, probe_source())
    assert outcome.exit_code == 0, outcome.logs[-3000:]
    assert "SECCOMP 2 uid 0" in outcome.logs  # filter mode, as root in the box
    found = parse(outcome.logs)
    assert problems(found) == [], outcome.logs[-3000:]


@pytest.fixture(scope="module")
def runner_seat(backend):
    """The probe as an upload: it runs at import, in the submission's runner, then the honest kernel
    is judged as usual."""
    return evaluate(backend, probe_source(HONEST))


def test_every_denied_call_fails_in_the_submissions_seat(runner_seat):
    text = everything(runner_seat)
    assert "SECCOMP 2 uid 65534" in text, text[-3000:]
    assert problems(parse(runner_seat.report.to_json().get("logs", "") + runner_seat.logs)) == [], text[-3000:]


def test_an_honest_kernel_still_passes_under_the_filter(runner_seat):
    assert runner_seat.report.to_json()["verdict"] in ("verified", "flagged"), everything(runner_seat)[-3000:]
    assert not set(runner_seat.report.to_json()["reason_codes"]) & {"timeout", "out_of_memory", "sandbox", "crash"}
    tests = runner_seat.report.to_json()["tests"]
    assert tests and all(t["passed"] for t in tests)
    # flagged only as any such upload is: the probe imports ctypes (the source scan says so) and
    # the honest kernel is torch's own softmax, no kernel of its own
    assert set(runner_seat.report.to_json()["reason_codes"]) <= {"suspicious_source", "no_kernel_launched"}


def test_the_runner_still_drops_to_its_own_user(runner_seat):
    iso = runner_seat.report.to_json()["isolation"]
    assert iso["separate_user"] is True and iso["runner_uid"] == 65534
    assert iso["runner_no_new_privs"] is True and int(iso["runner_cap_eff"], 16) == 0
