"""evaluator/tasks/loader.py and the registry: the built-in folder and every EVALUATOR_TASKS_PATH
directory are searched in order; a KernelBench checkout's levels become tracks; a broken file is
named with its error and hides nothing; a name taken twice keeps the first."""
import shutil

import pytest

import problem_files
from evaluator.tasks import TASKS, errors, get_task, sources
from evaluator.tasks.loader import BUILTIN, scan

BUILT_IN = {"softmax", "layernorm", "gelu_bias_residual", "matmul_bias_relu", "transformer_block"}


def test_the_built_in_tasks_are_folders(monkeypatch):
    monkeypatch.delenv("EVALUATOR_TASKS_PATH", raising=False)
    found = sources()
    assert set(found) == BUILT_IN
    assert all(s.format == "folder" and s.track == "builtin" and s.path.parent == BUILTIN for s in found.values())


def test_a_tasks_path_adds_tracks_and_names_a_broken_file(tmp_path, monkeypatch):
    problem_files.write(tmp_path / "kb", ["level1/1_Scale-Tanh.py", "level1/4_broken.py", "level2/3_Linear_ReLU.py"])
    extra = tmp_path / "mine"
    shutil.copytree(BUILTIN / "softmax", extra / "softmax2", ignore=shutil.ignore_patterns("solutions"))
    toml = extra / "softmax2" / "task.toml"
    toml.write_text(toml.read_text().replace('name = "softmax"', 'name = "softmax2"'))
    monkeypatch.setenv("EVALUATOR_TASKS_PATH", f"{tmp_path / 'kb'}:{extra}")
    found = sources()
    assert BUILT_IN | {"1_scale_tanh", "4_broken", "3_linear_relu", "softmax2"} == set(found)
    assert found["1_scale_tanh"].track == "kernelbench-level1" and found["3_linear_relu"].track == "kernelbench-level2"
    assert found["softmax2"].format == "folder"
    assert "1_scale_tanh" in TASKS and get_task("1_scale_tanh").name == "1_scale_tanh"
    assert get_task("softmax2").title == get_task("softmax").title
    with pytest.raises(KeyError, match="does not load"):
        get_task("4_broken")
    assert any("no_such_module_anywhere" in e for e in errors().values())
    # the others still load after the broken one failed
    assert get_task("3_linear_relu").model.problem.has_state


def test_a_name_taken_twice_keeps_the_first(tmp_path, monkeypatch):
    shutil.copytree(BUILTIN / "layernorm", tmp_path / "layernorm", ignore=shutil.ignore_patterns("solutions"))
    monkeypatch.setenv("EVALUATOR_TASKS_PATH", str(tmp_path))
    assert sources()["layernorm"].path == BUILTIN / "layernorm"
    assert any("taken by" in e and str(tmp_path) in p for p, e in errors().items())


def test_scan_of_one_file_and_of_a_missing_path(tmp_path):
    problem_files.write(tmp_path, ["level1/1_Scale-Tanh.py"])
    (one,) = scan(tmp_path / "level1" / "1_Scale-Tanh.py")
    assert one.name == "1_scale_tanh" and one.track == "kernelbench-level1"
    assert scan(tmp_path / "nowhere") == []


def test_a_task_stays_loaded_while_its_file_stays_where_it_was(tmp_path, monkeypatch):
    # a new tasks path re-scans, but a built-in task is the same object after it (tests and
    # helpers hold it) and one whose file moved out of the path is gone
    problem_files.write(tmp_path, ["level1/1_Scale-Tanh.py"])
    softmax = get_task("softmax")
    monkeypatch.setenv("EVALUATOR_TASKS_PATH", str(tmp_path))
    assert get_task("softmax") is softmax
    scale = get_task("1_scale_tanh")
    monkeypatch.setenv("EVALUATOR_TASKS_PATH", f"{tmp_path}:{tmp_path / 'none'}")
    assert get_task("1_scale_tanh") is scale and get_task("softmax") is softmax
    monkeypatch.delenv("EVALUATOR_TASKS_PATH")
    assert "1_scale_tanh" not in TASKS and get_task("softmax") is softmax


def test_describe_and_the_registry_share_one_task_object_per_file():
    # `python -m evaluator tasks` loads every source; a test or helper holding the registry's
    # Task (or the reference module's TASK) still holds the one the registry gives
    from evaluator.tasks.describe import describe
    from evaluator.tasks.folder import reference_module

    gelu = get_task("gelu_bias_residual")
    assert any(row["name"] == "gelu_bias_residual" for row in describe([])["tasks"])
    assert get_task("gelu_bias_residual") is gelu is reference_module("gelu_bias_residual").TASK
