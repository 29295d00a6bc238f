"""How steady would the score be with another estimator? Reads the per-call samples the judge
writes with EVALUATOR_SAMPLES_DIR set (one JSON file per evaluation of the same submission) and
prints, for each estimator, every evaluation's score (speedup vs torch.compile, geometric mean over
shapes) and the spread max/min - 1.

    EVALUATOR_SAMPLES_DIR=DIR python -m evaluator run examples/softmax.py --task softmax ...  (x5)
    python bench/spread_estimators.py DIR [--json OUT]

Estimators, each applied alike to the candidate and to torch.compile:
  median         what the evaluator reports: median of all timed calls of each side
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
    cand, comp = row["candidate"], row["compile"]
    if estimator == "median":
        return statistics.median(comp) / statistics.median(cand)
    if estimator == "p25":
        return quantile(comp, 0.25) / quantile(cand, 0.25)
    if estimator == "trimmed_mean":
        return trimmed_mean(comp) / trimmed_mean(cand)
    if estimator == "round_ratio":
        pairs = zip(rounds(comp, row["block"]), rounds(cand, row["block"]))
        return statistics.median(statistics.median(k) / statistics.median(c) for k, c in pairs)
    raise ValueError(estimator)


ESTIMATORS = ("median", "round_ratio", "p25", "trimmed_mean")


def score(samples: dict, estimator: str) -> float:
    ratios = [shape_ratio(row, estimator) for row in samples["shapes"]]
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def analyse(paths: list[str]) -> dict:
    runs = [json.load(open(p)) for p in paths]
    out = {"files": [os.path.basename(p) for p in paths], "estimators": {}}
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
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
