"""How steady would the score be with another estimator? Reads the per-call samples the judge
writes with EVALUATOR_SAMPLES_DIR set (one JSON file per evaluation of the same submission) and
prints, for each estimator, every evaluation's score (speedup vs torch.compile, geometric mean over
shapes) and the spread max/min - 1.

    EVALUATOR_SAMPLES_DIR=DIR python -m evaluator run examples/softmax.py --task softmax ...  (x5)
    python bench/spread_estimators.py DIR [--json OUT]

Estimators, each applied alike to the candidate and to torch.compile:
  median         what the evaluator reports: median of each side's stream times (to an event on
                 the call's stream), the candidate's plus what was charged to it for after-stream
                 work (judge.py: nothing unless flagged)
  stream_median  the stream medians without the after-stream charge (what the shipped rule scores
                 when nothing is flagged; p6/f2-f4 samples were written under earlier charge rules)
  sync_median    the ruler of sessions 1-4: median of the full times (to an end event recorded
                 after a device-wide synchronize: the host's return from it included)
  round_ratio    per round, median(compile block) / median(candidate block); median of those
                 (drifts slower than one round cancel)
  p25            25th percentile of each side
  trimmed_mean   mean of each side's calls without its fastest and slowest 10 %
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluator.timing import quantile  # noqa: E402


def trimmed_mean(xs, cut=0.1):
    """The mean after dropping the fastest and the slowest `cut` of the calls (by rank)."""
    s = sorted(xs)
    k = int(cut * len(s))
    return statistics.fmean(s[k:len(s) - k])


def rounds(xs, block):
    return [xs[i:i + block] for i in range(0, len(xs) - block + 1, block)]


def shape_ratio(row: dict, estimator: str) -> float:
    excess = row.get("candidate_after_stream_ms", 0.0)
    cand, comp = [x + excess for x in row["candidate"]], row["compile"]
    if estimator == "median":
        return statistics.median(comp) / statistics.median(cand)
    if estimator == "stream_median":
        return statistics.median(row["compile"]) / statistics.median(row["candidate"])
    if estimator == "sync_median":  # samples from before session 5 have only the full times
        cand, comp = row.get("candidate_sync", row["candidate"]), row.get("compile_sync", row["compile"])
        return statistics.median(comp) / statistics.median(cand)
    if estimator == "p25":
        return quantile(comp, 0.25) / quantile(cand, 0.25)
    if estimator == "trimmed_mean":
        return trimmed_mean(comp) / trimmed_mean(cand)
    if estimator == "round_ratio":
        pairs = zip(rounds(comp, row["block"]), rounds(cand, row["block"]))
        return statistics.median(statistics.median(k) / statistics.median(c) for k, c in pairs)
    raise ValueError(estimator)


ESTIMATORS = ("median", "stream_median", "sync_median", "round_ratio", "p25", "trimmed_mean")


def score(samples: dict, estimator: str) -> float:
    ratios = [shape_ratio(row, estimator) for row in samples["shapes"]]
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def gaps(row: dict) -> dict | None:
    """Median full-minus-stream time per side (the host's return from the synchronize, plus any
    work left on other streams), in us; None for samples without stream times."""
    if "candidate_sync" not in row:
        return None
    return {side: 1e3 * statistics.median(f - s for f, s in zip(row[f"{side}_sync"], row[side]))
            for side in ("candidate", "eager", "compile")}


def analyse(paths: list[str]) -> dict:
    runs = [json.load(open(p)) for p in paths]
    out = {"files": [os.path.basename(p) for p in paths], "estimators": {},
           "gaps_us": [[gaps(row) for row in r["shapes"]] for r in runs]}
    for est in ESTIMATORS:
        scores = [score(r, est) for r in runs]
        out["estimators"][est] = {"scores": scores, "spread": max(scores) / min(scores) - 1}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    paths = sorted(glob.glob(os.path.join(args.dir, "*.json")))
    if len(paths) < 2:
        print(f"need at least two sample files in {args.dir}, found {len(paths)}", file=sys.stderr)
        return 2
    out = analyse(paths)
    for est, r in out["estimators"].items():
        print(f"{est:13s} spread {r['spread'] * 100:5.2f} %   " + " ".join(f"{s:.3f}" for s in r["scores"]))
    for name, rows in zip(out["files"], out["gaps_us"]):
        for g in filter(None, rows):
            print(f"{name}: after-stream gap (us) " + ", ".join(f"{k} {v:.1f}" for k, v in g.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
