"""compute-sanitizer catches planted memory and race bugs that pass every output check.
Run on a GPU host: python -m pytest tests/gpu_sanitizer -m gpu"""
from pathlib import Path

import pytest

from evaluator.judge import sanitize
from evaluator.api import evaluate_file

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def test_parse_picks_the_tool_findings():
    out = ("========= COMPUTE-SANITIZER\n"
           "========= Invalid __global__ write of size 4 bytes\n"
           "=========     at _softmax+0x2d0\n"
           "========= Error: Race reported between Write access at softmax_rows+0x120\n"
           "========= ERROR SUMMARY: 2 errors\n")
    assert sanitize.parse(out) == ["Invalid __global__ write of size 4 bytes",
                                   "Error: Race reported between Write access at softmax_rows+0x120"]
    assert sanitize.parse("========= ERROR SUMMARY: 0 errors\n") == []


def test_cpu_and_test_mode_reports_are_left_alone():
    report = {"device": "cpu", "mode": "ranked", "verdict": "verified", "reasons": [], "reason_codes": []}
    assert sanitize.apply(dict(report), b"") == report


def _needs_sanitizer():
    if not sanitize.find_sanitizer():
        pytest.skip("compute-sanitizer not installed")


@pytest.mark.gpu
@pytest.mark.parametrize("name,tool", [("oob_softmax.py", "memcheck"), ("race_softmax.py", "racecheck")])
def test_planted_bug_is_flagged_by_the_sanitizer(name, tool):
    _needs_sanitizer()
    report = evaluate_file(HERE / name, task="softmax", device="cuda", mode="ranked")
    results = {r["tool"]: r for r in report["sanitizer"]}
    if results[tool]["ok"] is None:
        pytest.skip(f"{tool} could not run here: {results[tool]['note']}")
    assert report["verdict"] == "flagged", report["reasons"]
    assert "sanitizer" in report["reason_codes"]
    assert results[tool]["ok"] is False and results[tool]["findings"]


@pytest.mark.gpu
def test_honest_example_is_clean_under_the_sanitizer():
    _needs_sanitizer()
    report = evaluate_file(ROOT / "examples" / "softmax.py", task="softmax", device="cuda", mode="ranked")
    assert "sanitizer" not in report["reason_codes"], report["reasons"]
    assert all(r["ok"] in (True, None) for r in report["sanitizer"])
