"""How far the score's error is the sampling noise of the overhead medians, from the batches that
EVALUATOR_SAMPLES_DIR keeps (honest candidates only: their own CUDA events are the yardstick).

    python bench/overhead_noise.py SAMPLES_DIR [SAMPLES_DIR ...]

Per shape-evaluation of a GPU run:
  gap      the candidate's median overhead (window less its own events: its claim, honest
           examples only) less torch.compile's, in ms
  se       what the two medians' sampling error alone predicts for that gap
           (1.25 x MAD / sqrt(batches) per side, in quadrature)
  q=0.5 .. the score as the judge computes it (timed.round_ratio over batch.per_call), with
           each baseline side's overhead taken as that quantile of its batches instead of the
           median, as a percentage off the runners' own events

Then, per SAMPLES_DIR: the standard deviation of the gap across evaluations against the rms of
se (equal when the gap is sampling noise, larger when it drifts between evaluations), and each
estimator's rms error. Nothing here is used for a score.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluator.judge import batch
from evaluator.judge import timed
from evaluator.common import timing  # noqa: E402

QUANTILES = (0.5, 0.25, 0.1)


def mad(values: list[float]) -> float:
    middle = statistics.median(values)
    return 1.4826 * statistics.median([abs(v - middle) for v in values])


def timed_batches(row: dict, side: str) -> list[batch.Timed]:
    fields = batch.Timed.__dataclass_fields__
    return [batch.Timed(**{k: v for k, v in t.items() if k in fields}) for t in row[side]]


def score(row: dict, q: float) -> float | None:
    """The judge's score of one shape with the baselines' overheads read at quantile q."""
    got = {side: timed_batches(row, side) for side in timed.SIDES}
    own = {side: max(0.0, timing.quantile([t.window_ms - t.device_ms for t in got[side]], q))
           for side in ("eager", "compile")}
    points = [(statistics.median([t.window_ms for t in got[side]]), own[side]) for side in own]
    overheads = {"cand": batch.candidate_overhead(statistics.median([t.window_ms for t in got["cand"]]), points),
                 **own}
    times = {side: batch.per_call(got[side], overheads[side], row["calls"][side]) for side in timed.SIDES}
    return timed.round_ratio(timed.by_round(times["compile"], row["rounds"]["compile"]),
                             timed.by_round(times["cand"], row["rounds"]["cand"]))


def usable(row: dict) -> bool:
    return ("rounds" in row and all(row.get(side) for side in timed.SIDES)
            and all(t.get("device_ms") is not None for t in row["cand"]))


def read(folder: str) -> list[dict]:
    out = []
    for path in sorted(Path(folder).rglob("*.json")):
        for row in json.loads(path.read_text())["shapes"]:
            if not usable(row):
                continue
            calls = row["calls"]
            events = (statistics.median([t["device_ms"] / calls["compile"] for t in row["compile"]])
                      / statistics.median([t["device_ms"] / calls["cand"] for t in row["cand"]]))
            cand = [t["window_ms"] - t["device_ms"] for t in row["cand"]]
            comp = [t["window_ms"] - t["device_ms"] for t in row["compile"]]
            out.append({"name": path.stem, "batches": len(comp), "events": events,
                        "gap": statistics.median(cand) - statistics.median(comp),
                        "se": 1.25 * math.sqrt(mad(cand) ** 2 / len(cand) + mad(comp) ** 2 / len(comp)),
                        **{q: score(row, q) / events - 1 for q in QUANTILES}})
    return out


def rms(values: list[float]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    args = parser.parse_args(argv)
    pooled = []
    for folder in args.folders:
        rows = read(folder)
        pooled += rows
        print(f"== {folder}")
        for r in rows:
            errors = " ".join(f"q={q}: {100 * r[q]:+.2f} %" for q in QUANTILES)
            print(f"{r['name'][:40]:40} batches {r['batches']:3d}  events {r['events']:.4f}  "
                  f"gap {r['gap']:+.4f} ms  se {r['se']:.4f} ms  {errors}")
        summary(rows)
    if len(args.folders) > 1:
        print("== all of them")
        summary(pooled)
    return 0


def summary(rows: list[dict]) -> None:
    if len(rows) > 1:
        print(f"gap across evaluations: sd {statistics.pstdev([r['gap'] for r in rows]):.4f} ms, "
              f"sampling error predicts {rms([r['se'] for r in rows]):.4f} ms")
    if rows:
        print("score off the events, rms: " + ", ".join(
            f"q={q}: {100 * rms([r[q] for r in rows]):.3f} %" for q in QUANTILES))


if __name__ == "__main__":
    sys.exit(main())
