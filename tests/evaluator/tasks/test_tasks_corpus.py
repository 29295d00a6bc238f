"""The KernelBench-style corpus written for these tests (tests/data/kernelbench: 28 problems in
level1/ and level2/, with parameters and without, several inputs of different dtypes, a broken
file, trivial problems, one too large for any device): the triage decides each as EXPECTED.json
says, in one process, and each problem's solutions are verified, rejected as `mismatch`, or
rejected as `params_mismatch` by the whole evaluator."""
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from evaluator.api import evaluate_file
from evaluator.tasks.describe import describe
from evaluator.tasks.triage import triage

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "data" / "kernelbench"
EXPECTED = json.loads((CORPUS / "EXPECTED.json").read_text())
# EXPECTED.json's reasons, as the triage words them
WORDS = {"trivial_constant": "constant", "trivial_insensitive": "barely changes", "empty": "empty",
         "too_fast": "too fast", "too_large": "more memory", "network": "network"}
SOLUTIONS = sorted((CORPUS / "solutions").glob("*/*.py"))


def test_the_triage_decides_each_problem_as_expected():
    got = triage([str(CORPUS)], "cpu")
    results = {r["name"]: r for r in got["results"]}
    broken = {e["name"] for e in got["errors"]}
    for path, want in EXPECTED.items():
        name = want["name"]
        if want["why"] == "broken":
            assert name in broken, path
        elif want["outcome"] == "added":
            assert results[name]["ok"], (path, results[name])
        else:
            assert not results[name]["ok"] and WORDS[want["why"]] in " ".join(results[name]["reasons"]), \
                (path, results[name])
    assert len(results) + len(broken) == len(EXPECTED)


def test_describe_reads_the_tracks_and_the_parameters():
    rows = {r["name"]: r for r in describe([str(CORPUS)])["tasks"]}
    for path, want in EXPECTED.items():
        if want["why"] in ("broken", "network"):
            continue
        row = rows[want["name"]]
        assert row["track"] == f"kernelbench-{path.split('/')[0]}", path
        assert row["has_params"] == want["params"], path


@pytest.fixture(scope="module")
def tasks_path():
    # a copy the runner (uid nobody when the judge is root) can read
    root = Path(tempfile.mkdtemp(prefix="kb-corpus-"))
    root.chmod(0o755)
    for level in ("level1", "level2"):
        shutil.copytree(CORPUS / level, root / level)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_a_solution(tasks_path, monkeypatch, path):
    # the judge here, the runner (which reads the variable too) in its own process
    monkeypatch.setenv("EVALUATOR_TASKS_PATH", str(tasks_path))
    report = evaluate_file(path, task=path.parent.name, device="cpu", mode="test")
    if path.stem.startswith("correct"):
        assert report["verdict"] in ("verified", "flagged") and \
            set(report["reason_codes"]) <= {"no_kernel_launched"}, report["reasons"]
        assert any(t.get("hidden") for t in report["tests"])
    elif path.stem.startswith("wrong"):
        assert report["verdict"] == "rejected" and "mismatch" in report["reason_codes"], report["reasons"]
    else:
        assert report["reason_codes"] == ["params_mismatch"], report["reasons"]
