"""Task definitions in the box (/tasks): what the site hands in is there, byte for byte, and
nothing in the box can change it, not even the judge (root in the box), on both backends; the
paths it may be given; the outer shape of describe's and triage's answers."""
from __future__ import annotations

import json

import pytest

import sandbox
from sandbox import box as _box
from sandbox import taskcmd
from sandbox.run import run_box
from sandbox_helpers import LIMITS

FILES = {"level1/1_A.py": b"# problem one\n", "level1/2_B.py": b"# problem two\n", "added/t/task.toml": b"x = 1\n"}

PROBE = r'''
import json, os
out = {"env": os.environ.get("EVALUATOR_TASKS_PATH"), "read": open("/tasks/level1/1_A.py").read(),
       "listed": sorted(os.listdir("/tasks/level1")), "mode": oct(os.stat("/tasks/level1/1_A.py").st_mode),
       "dir_mode": oct(os.stat("/tasks/level1").st_mode), "tries": {}}
def attempt(what, fn):
    try:
        fn()
        out["tries"][what] = "done"
    except OSError as e:
        out["tries"][what] = e.strerror
attempt("append", lambda: open("/tasks/level1/1_A.py", "a").write("x"))
attempt("create", lambda: open("/tasks/level1/3_C.py", "w").write("x"))
attempt("chmod", lambda: os.chmod("/tasks/level1/1_A.py", 0o777))
attempt("remove", lambda: os.unlink("/tasks/level1/2_B.py"))
attempt("rename", lambda: os.rename("/tasks/level1/2_B.py", "/tasks/level1/9.py"))
attempt("mkdir", lambda: os.mkdir("/tasks/new"))
out["mountinfo"] = open("/proc/self/mountinfo").read()
json.dump(out, open("/out/report.json", "w"))
'''


def probe(backend: str, *, tasks_path: bool):
    def collect(box, outcome):
        try:
            return json.loads((box.out_dir / "report.json").read_text()), str(box.workdir)
        except OSError:
            return None, str(box.workdir)

    outcome, (seen, workdir) = run_box(sandbox.choose_backend(backend), argv_for=lambda py: [py, "-c", PROBE],
                                       source=b"", device="cpu", limits=LIMITS, collect=collect,
                                       task_files=FILES, tasks_path=tasks_path)
    assert seen is not None, outcome.logs
    return seen, workdir


def test_task_files_are_there_and_read_only_even_to_the_judge(backend):
    seen, workdir = probe(backend, tasks_path=True)
    assert seen["env"] == "/tasks" and seen["read"] == "# problem one\n"
    assert seen["listed"] == ["1_A.py", "2_B.py"]
    assert seen["mode"] == "0o100644" and seen["dir_mode"] == "0o40755"
    assert seen["tries"] == {k: "Read-only file system" for k in
                             ("append", "create", "chmod", "remove", "rename", "mkdir")}
    if backend == "bwrap":
        # files of the box's own root, like the upload: no mount names the host's work directory
        # but /out's
        lines = [line for line in seen["mountinfo"].splitlines() if workdir in line]
        assert [line.split()[4] for line in lines] == ["/out"]


def test_the_evaluator_is_told_of_them_only_when_asked(backend):
    seen, _ = probe(backend, tasks_path=False)
    assert seen["env"] is None and seen["read"] == "# problem one\n"


@pytest.mark.parametrize("files", [
    {"../x.py": b""}, {"/abs.py": b""}, {"a//b.py": b""}, {"a/./b.py": b""}, {"": b""},
    {"a b.py": b""}, {"x.py": "text"}, {"a": b"", "a/b.py": b""},
])
def test_task_file_paths_are_plain_relative_names(files):
    with pytest.raises(ValueError):
        _box.check_task_files(files)


def test_a_command_names_only_what_it_was_given():
    with pytest.raises(ValueError, match="none of the files"):
        sandbox.task_command(kind="describe", files=FILES, paths=["level2"])
    with pytest.raises(ValueError, match="bad task command"):
        sandbox.task_command(kind="run", files=FILES)
    with pytest.raises(ValueError, match="no task files"):
        sandbox.task_command(kind="describe")
    assert taskcmd.task_argv("/py", kind="triage", paths=["/tasks/level1"], device="cuda") == [
        "/py", "-m", "evaluator", "triage", "/tasks/level1", "--json", "/out/report.json", "--device", "cuda"]


@pytest.mark.parametrize("data", [b"[]", b'{"tasks": {}}', b'{"tasks": [1]}', b'{"tasks": [], "errors": "x"}',
                                  b'{"tasks": [{"flops": NaN}]}', b"not json"])
def test_an_answer_of_another_shape_is_the_infrastructures_failure(data):
    with pytest.raises(sandbox.SandboxError):
        taskcmd.parse_output("describe", data)


def test_an_answer_of_the_contracts_shape_comes_back_as_it_is():
    assert taskcmd.parse_output("triage", b'{"results": [{"name": "a", "ok": true}]}') == {
        "results": [{"name": "a", "ok": True}], "errors": []}
