"""The ruler: the reference as a kernel reads about 1.00 against eager, torch.compile as a kernel
about 1.00 against torch.compile. Candidate and baselines are timed by the same harness in runner
processes (the baselines in the judge's trusted baseline runner), so both columns compare one code
path with itself. The CPU is a shared, noisy machine and its batches are short next to the output
copy they carry, so the bounds here are wide; on the GPU the target is 1.00 +- 0.01
(bench/judge_clock.py OUT calibrate, docs/bench/judge-clock.md)."""
import json

import pytest

from evaluator.api import evaluate_source
from evaluator.judge.calibrate import calibrate, sources, table
from evaluator.contract.report import REJECT_CODES

# The batch clock on this shared 2-core box, with its short CPU batches, read 1.11 / 0.96
# (reference vs eager, compile vs compile); longer batches, fewer of them, read 0.64-1.35
# (docs/evaluator.md, Timing). A ruler that compares two code paths reads far outside.
CPU_BOUNDS = (0.7, 1.35)


def test_calibration_sources_define_custom_kernel():
    from evaluator import validate_source

    for src in sources("softmax", "cpu"):
        assert validate_source(src) == []


@pytest.mark.slow
@pytest.mark.serial  # reads two speedups on the CPU
def test_softmax_reads_one_on_the_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALUATOR_QUICK", "0")  # quick mode's two calls per shape are too few
    # 12 s of rounds an evaluation instead of 30: each column's reading still comes from 5-16
    # rounds at the full shape, and a column that reads off is evaluated again
    monkeypatch.setenv("EVALUATOR_CPU_ROUNDS_S", "12")
    monkeypatch.setenv("EVALUATOR_SAMPLES_DIR", str(tmp_path))  # what every batch took, for a failure
    saved, said = [], []
    [row] = calibrate(["softmax"], device="cpu", on_row=lambda rows: saved.append(list(rows)),
                      progress=said.append)
    assert saved == [[row]]  # saved as soon as the task finished: a cut-short run keeps it
    assert any(line.startswith("softmax ") for line in said)  # and its row was printed then
    assert row["errors"] == []
    for column in ("reference", "compile"):  # each flag's reason comes with it
        assert len(row["reasons"][column]) == len(row["codes"][column]), row["reasons"]
    low, high = CPU_BOUNDS
    # a column that reads off gets another evaluation of its own, up to five in all. On this
    # 2-core box some evaluations run one side two to four times slower than the same code on the
    # other side (docs/evaluator.md, "The CPU ruler"); a ruler that compares two code paths reads
    # off in every one. The columns are two separate evaluations (calibrate runs them one after
    # the other), so a column that read within the bounds is not measured again.
    readings = {"reference_vs_eager": row["reference_vs_eager"], "compile_vs_compile": row["compile_vs_compile"]}
    ref_src, compile_src = sources("softmax", "cpu")
    again = {"reference_vs_eager": (ref_src, "speedup_vs_eager"),
             "compile_vs_compile": (compile_src, "speedup_vs_compile")}
    for column, (source, key) in again.items():
        for _ in range(4):
            if low <= readings[column] <= high:
                break
            report = evaluate_source(source, task="softmax", device="cpu", mode="ranked", time_limit_s=600)
            assert not set(report["reason_codes"]) & set(REJECT_CODES), report["reasons"]
            readings[column] = report[key]
        assert low <= readings[column] <= high, (column, readings, _batches(tmp_path))
    text = table([row], "cpu")
    assert "softmax" in text and "error" not in text


def _batches(where) -> list[str]:
    """Per evaluation and side: calls per batch and the median window, runner time and marks."""
    lines = []
    for path in sorted(where.glob("*.json")):
        for shape in json.loads(path.read_text())["shapes"]:
            for side in ("cand", "eager", "compile"):
                got = shape[side]
                mid = sorted(got, key=lambda t: t["window_ms"])[len(got) // 2] if got else {}
                lines.append(f"{path.name} {side} K={shape['calls'][side]} n={len(got)} "
                             f"overhead={shape['overhead_ms']:.2f} median batch={mid}")
    return lines
