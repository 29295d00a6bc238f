"""A flagged CPU report, shaped like the evaluator's, for the admin and live-status tests."""


def flagged_report(task, *, logs: str = "compiled 1 kernel") -> dict:
    shape = task.bench_shapes["cpu"][0]
    return {
        "schema": 1, "verdict": "flagged",
        "reasons": ["2.10x faster than torch.compile, above this task's 1.5x bound: held for review"],
        "reason_codes": ["too_fast_vs_compile"], "task": task.name, "mode": "ranked", "device": "cpu",
        "gpu_name": None, "versions": {"python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0"},
        "speedup_vs_compile": 2.1, "speedup_vs_eager": 3.0,
        "shapes": [{"shape": shape, "candidate_ms": 0.1, "eager_ms": 0.3, "compile_ms": 0.21, "wall_ms": 0.11,
                    "floor_ms": 0.02, "speedup_vs_compile": 2.1, "speedup_vs_eager": 3.0}],
        "tests": [{"shape": {"M": 7, "N": 131}, "passed": True, "max_abs_err": 1e-7, "message": ""}],
        "phases": {"startup_s": 1.0, "compile_s": 1.0, "correctness_s": 1.0, "timing_s": 1.0},
        "kernels_launched": ["_row_softmax"], "logs": logs,
    }
