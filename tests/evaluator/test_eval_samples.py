"""The judge's per-call samples (EVALUATOR_SAMPLES_DIR) and the estimator study that reads them."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _estimators():
    spec = importlib.util.spec_from_file_location("spread_estimators", ROOT / "bench" / "spread_estimators.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_samples_are_written_and_the_median_estimator_reproduces_the_score(evaluate, honest, tmp_path, monkeypatch):
    where = tmp_path / "samples"
    monkeypatch.setenv("EVALUATOR_SAMPLES_DIR", str(where))
    reports = [evaluate(honest, mode="ranked") for _ in range(2)]
    assert all(r["verdict"] == "verified" for r in reports), [r["reasons"] for r in reports]
    files = sorted(where.glob("softmax-*.json"))
    assert len(files) == 2
    for f, r in zip(files, reports):
        data = json.loads(f.read_text())
        [row] = data["shapes"]
        assert row["shape"] == r["shapes"][0]["shape"]
        for side in ("candidate", "eager", "compile"):
            assert row[side] and len(row[side]) % row["block"] == 0 and min(row[side]) > 0
    est = _estimators()
    out = est.analyse([str(f) for f in files])
    got = out["estimators"]["median"]["scores"]
    assert got == pytest.approx([r["speedup_vs_compile"] for r in reports], rel=1e-9)
    for name in est.ESTIMATORS:
        assert all(s > 0 for s in out["estimators"][name]["scores"]) and out["estimators"][name]["spread"] >= 0


def test_no_samples_without_the_setting(evaluate, honest, tmp_path, monkeypatch):
    monkeypatch.delenv("EVALUATOR_SAMPLES_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    evaluate(honest, mode="ranked")
    assert not list(tmp_path.rglob("softmax-*.json"))


def test_the_round_ratio_cancels_a_drift_the_median_does_not():
    est = _estimators()
    # two rounds of 3 calls; the machine gets 20 % slower in round 2 for both sides alike
    row = {"block": 3, "candidate": [1.0, 1.0, 1.0, 1.2, 1.2, 1.2], "compile": [1.1, 1.1, 1.1, 1.32, 1.32, 1.32]}
    assert est.shape_ratio(row, "round_ratio") == pytest.approx(1.1)
    row["candidate"] = [1.0, 1.0, 1.0, 1.0, 1.2, 1.2]  # one call of round 2 ran before the drift
    assert est.shape_ratio(row, "round_ratio") == pytest.approx(1.1)
    assert est.shape_ratio(row, "median") != pytest.approx(1.1)
