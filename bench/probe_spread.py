"""The readings evaluator/judge/touched.py bounds, over every batch that EVALUATOR_SAMPLES_DIR kept: how
far honest runs sit from each bound, and how far an attack's touched rounds go past it.

    python bench/probe_spread.py SAMPLES_DIR [SAMPLES_DIR ...]

Per samples file (one evaluation) and shape:
  probe     each side's checker's probe, before and after each window (ms):
            median, p99, max; touched.PROBE_FLOOR_MS is the bound
  device    each baseline batch's device time per call over its side's median: p99, max
            (touched.DEVICE_RATIO)
  write     each side's write per call over that checker's median (fresh writes): p99, max
            (touched.WRITE_RATIO)
  touched   the rounds the judge left out, as the samples record them
Then the same over all files. Nothing here is used for a score.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluator.common import timing
from evaluator.judge import touched  # noqa: E402


def ratios(values: list[float]) -> list[float]:
    middle = timing.median(values)
    return [v / middle for v in values] if values and middle > 0 else []


def readings(shape: dict) -> dict:
    probes, device, write = [], [], []
    for side in ("cand", "eager", "compile"):
        probes += [p for t in shape.get(side, []) for p in (t.get("probe_before_ms", 0.0), t.get("probe_after_ms", 0.0)) if p]
    for side in ("eager", "compile"):
        batches = shape.get(side, [])
        device += ratios([t["device_ms"] / t["calls"] for t in batches if t.get("calls")])
    for side in ("cand", "eager", "compile"):
        write += ratios([t["gen_ms"] / t["calls"] for t in shape.get(side, []) if t.get("fresh") and t.get("calls")])
    return {"probe": probes, "device": device, "write": write, "touched": sorted(shape.get("touched", {}), key=int)}


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return (f"median {timing.median(values):.3g}  p99 {timing.quantile(values, 0.99):.3g}  "
            f"max {max(values):.3g}  (n={len(values)})")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    every = {"probe": [], "device": [], "write": []}
    for folder in argv:
        for path in sorted(Path(folder).glob("*.json")):
            data = json.loads(path.read_text())
            for k, shape in enumerate(data.get("shapes", [])):
                got = readings(shape)
                print(f"{path.name} shape {k + 1}: touched rounds {got['touched'] or 'none'}")
                for key in every:
                    every[key] += got[key]
                    print(f"  {key:7s} {spread(got[key])}")
    print(f"all: probe {spread(every['probe'])}  (bound {touched.PROBE_FLOOR_MS} ms)")
    print(f"     device {spread(every['device'])}  (bound {touched.DEVICE_RATIO}x)")
    print(f"     write {spread(every['write'])}  (bound {touched.WRITE_RATIO}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
