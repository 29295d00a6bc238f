"""Where the overhead of a timed batch goes: the marks of every batch (batch.Timed.marks) in the
samples that EVALUATOR_SAMPLES_DIR collects, as the median length of each segment per evaluation
and side.

    python bench/clock_marks.py SAMPLES_DIR [SAMPLES_DIR ...] [--json OUT.json]

One row per evaluation (sample file), shape and side; one column per segment, in ms:

  wake      `batch` sent and the group continued -> the runner read the message
  calls     the runner read it -> its last call launched (GPU) or returned (CPU)
  describe  -> outputs described and sent to the judge (GPU) or stored in the output file (CPU)
  sync      -> synchronized (GPU only)
  arm       GPU only, beside `sync`: the judge read the description -> the checker looked the
            outputs up (when it ends after the runner's `batch_done`, the window waits for it)
  answer    -> the judge read the answer
  stop      -> the judge stopped the runner's group
  sample    -> the clock stopped (GPU: the checker's sample; CPU: every thread stopped)
  over      the window less the trusted baseline's own time (baseline sides only)

The runner's and the checker's marks are what those processes report: a segment that varies
between two evaluations of one kernel, or between two sides, is where the clock's spread comes
from. Nothing here is used for a score.

A second table puts the candidate's speedup over torch.compile per evaluation and shape, read five
ways from the same batches, and the max/min of each column over the evaluations:

  score     the judge's: each side's windows less the overhead it took off them (`overheads` in
            the samples; older samples: one overhead pooled over the baseline batches)
  device    the runners' own CUDA events on both sides (the candidate's are its claim: honest
            examples only; it says how far the kernels' own speed moved between evaluations)
  base+pool torch.compile by its own events, the candidate's window less the overhead the judge
            took off it (`overhead_ms`: older samples pooled it over the baseline batches)
  base+mean torch.compile by its own events, the candidate's window less the mean of eager's and
            torch.compile's own overheads
  cand-own  torch.compile by its own events, the candidate's window less its own overhead
            (window less its claimed events: honest examples only)
  round     the judge's score, but the candidate's overhead from the line through the eager and
            torch.compile batches of its own round rather than through their medians

A third table splits each side's overhead (window less its runner's CUDA events; for the
candidate, honest examples only) into where it lies relative to the device's work, medians in ms:

  before    the window's start -> the runner read `batch` (its first call follows at once)
  tail      the runner's events ended -> its synchronize returned (runner3 - runner0 - events)
  answer    -> the judge read `batch_done`
  after     -> the clock stopped (stop the group, the checker's sample, its reply)
  total     the whole overhead; `pool-err` (candidate rows) is the overhead the judge took off
            the candidate's windows less its own: what that error does to the score is about
            pool-err / window
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
from evaluator.judge import timed  # noqa: E402

SEGMENTS = (("wake", None, "runner0"), ("calls", "runner0", "runner1"), ("describe", "runner1", "runner2"),
            ("sync", "runner2", "runner3"), ("arm", "described", "armed"), ("answer", None, "answered"),
            ("stop", "answered", "stopped"),
            ("sample", "stopped", "end"))


def segments(marks: dict) -> dict:
    """Segment lengths of one batch; a segment whose marks are missing is left out. `answer` runs
    from the runner's last mark, `wake` from 0 (the window's start)."""
    out = {}
    last_runner = max((k for k in marks if k.startswith("runner")), default=None)
    for name, start, end in SEGMENTS:
        if name == "answer":
            start = last_runner
        a = 0.0 if start is None else marks.get(start)
        b = marks.get(end)
        if a is not None and b is not None:
            out[name] = b - a
    return out


def files(dirs: list[Path]) -> list[Path]:
    return [path for where in dirs for path in sorted(where.glob("*.json"))]


def rows(paths: list[Path]) -> list[dict]:
    found = []
    for path in paths:
        data = json.loads(path.read_text())
        for shape in data.get("shapes", []):
            for side in ("cand", "eager", "compile"):
                batches = shape.get(side, [])
                if not batches:
                    continue
                per = [segments(b.get("marks") or {}) for b in batches]
                row = {"file": path.name, "shape": shape["shape"], "side": side, "K": shape["calls"][side],
                       "window": statistics.median(b["window_ms"] for b in batches)}
                for name, _, _ in SEGMENTS:
                    got = [p[name] for p in per if name in p]
                    if got:
                        row[name] = statistics.median(got)
                if side != "cand":
                    row["over"] = statistics.median(b["window_ms"] - b["device_ms"] for b in batches)
                found.append(row)
    return found


def table(found: list[dict]) -> str:
    cols = ["window"] + [name for name, _, _ in SEGMENTS] + ["over"]
    lines = [f"{'file':44s} {'side':8s} {'K':>4s} " + " ".join(f"{c:>8s}" for c in cols)]
    for r in found:
        cells = " ".join(f"{r[c]:8.3f}" if c in r else f"{'-':>8s}" for c in cols)
        lines.append(f"{r['file'][:44]:44s} {r['side']:8s} {r['K']:4d} {cells}")
    return "\n".join(lines)


def _by_round(shape: dict, side: str, read) -> list[float]:
    """`read` of each batch of `side`, averaged per round where the samples say which round each
    batch belongs to (two candidate batches a round on the GPU), else batch by batch."""
    values = [read(b) for b in shape[side]]
    rounds = (shape.get("rounds") or {}).get(side)
    return timed.by_round(values, rounds) if rounds else values


def _median_ratio(shape: dict, base, cand) -> float:
    pairs = zip(_by_round(shape, "compile", base), _by_round(shape, "cand", cand))
    return statistics.median(k / c for k, c in pairs)


def ratios(paths: list[Path]) -> list[dict]:
    """Per evaluation and shape, the speedup over torch.compile by each reading (module doc)."""
    found = []
    for path in paths:
        for shape in json.loads(path.read_text()).get("shapes", []):
            if not (shape.get("cand") and shape.get("compile") and shape.get("eager")):
                continue
            pooled = shape["overhead_ms"]
            # the judge's own reading: each side's overhead as it took it off (older samples: one
            # pooled overhead for all three)
            taken = shape.get("overheads") or {side: pooled for side in ("cand", "eager", "compile")}
            own = {side: statistics.median(b["window_ms"] - b["device_ms"] for b in shape[side])
                   for side in ("cand", "eager", "compile")}
            mean = (own["eager"] + own["compile"]) / 2
            events = lambda b: b["device_ms"]  # noqa: E731
            found.append({
                "file": path.name, "shape": shape["shape"],
                "score": _median_ratio(shape, lambda b: b["window_ms"] - taken["compile"],
                                       lambda b: b["window_ms"] - taken["cand"]),
                "device": _median_ratio(shape, events, events),
                "base+pool": _median_ratio(shape, events, lambda b: b["window_ms"] - pooled),
                "base+mean": _median_ratio(shape, events, lambda b: b["window_ms"] - mean),
                "cand-own": _median_ratio(shape, events, lambda b: b["window_ms"] - own["cand"]),
                "round": _round_line(shape),
            })
    return found


def _round_line(shape: dict) -> float:
    """Per round: torch.compile's batch less its own overhead over the candidate's mean window
    less the overhead, at that window, of the line through the round's eager and torch.compile
    batches (batch.candidate_overhead); the median over rounds. NaN for samples without rounds."""
    rounds = shape.get("rounds") or {}
    if not all(rounds.get(side) for side in ("cand", "eager", "compile")):
        return math.nan
    by = {}
    for side in ("cand", "eager", "compile"):
        for b, r in zip(shape[side], rounds[side]):
            by.setdefault(r, {}).setdefault(side, []).append(b)
    k_cand, k_base = shape["calls"]["cand"], shape["calls"]["compile"]
    found = []
    for got in by.values():
        if len(got) < 3:
            continue
        points = [(b["window_ms"], b["window_ms"] - b["device_ms"]) for b in (got["eager"][0], got["compile"][0])]
        window = statistics.mean(b["window_ms"] for b in got["cand"])
        cand = (window - batch.candidate_overhead(window, points)) / k_cand
        found.append(got["compile"][0]["device_ms"] / k_base / cand)
    return statistics.median(found) if found else math.nan


RATIO_COLUMNS = ("score", "device", "base+pool", "base+mean", "cand-own", "round")
PARTS = ("before", "tail", "answer", "after", "total")


def _parts(b: dict) -> dict | None:
    m = b.get("marks") or {}
    if not all(k in m for k in ("cont", "runner0", "runner3", "answered", "end")):
        return None
    return {"before": m["runner0"] - m["cont"], "tail": m["runner3"] - m["runner0"] - b["device_ms"],
            "answer": m["answered"] - m["runner3"], "after": m["end"] - m["answered"],
            "total": b["window_ms"] - b["device_ms"]}


def overhead_parts(paths: list[Path]) -> str:
    """The third table (module doc), GPU samples only."""
    lines = [f"{'file':44s} {'side':8s} " + " ".join(f"{c:>8s}" for c in PARTS) + f" {'pool-err':>8s}"]
    for path in paths:
        for shape in json.loads(path.read_text()).get("shapes", []):
            for side in ("cand", "eager", "compile"):
                per = [q for q in (_parts(b) for b in shape.get(side, [])) if q]
                if not per:
                    continue
                med = {c: statistics.median(q[c] for q in per) for c in PARTS}
                err = f" {shape['overhead_ms'] - med['total']:+8.3f}" if side == "cand" else ""
                lines.append(f"{path.name[:44]:44s} {side:8s} " + " ".join(f"{med[c]:8.3f}" for c in PARTS) + err)
    return "\n".join(lines)


def freshness(paths: list[Path]) -> str:
    """The fourth table (module doc)."""
    pooled: dict[tuple[str, bool], list[dict]] = {}
    for path in paths:
        for shape in json.loads(path.read_text()).get("shapes", []):
            for side in ("cand", "eager", "compile"):
                for b in shape.get(side, []):
                    q = _parts(b)
                    if q:
                        pooled.setdefault((side, bool(b.get("fresh", True))), []).append(q)
    lines = [f"{'side':8s} {'inputs':8s} {'batches':>8s} {'total':>8s} {'before':>8s}"]
    for (side, fresh), got in sorted(pooled.items()):
        lines.append(f"{side:8s} {'fresh' if fresh else 'again':8s} {len(got):8d} "
                     f"{statistics.median(q['total'] for q in got):8.3f} {statistics.median(q['before'] for q in got):8.3f}")
    return "\n".join(lines)


def ratio_table(found: list[dict]) -> str:
    lines = [f"{'file':44s} " + " ".join(f"{c:>9s}" for c in RATIO_COLUMNS)]
    for r in found:
        lines.append(f"{r['file'][:44]:44s} " + " ".join(f"{r[c]:9.4f}" for c in RATIO_COLUMNS))
    by_shape: dict[str, list[dict]] = {}
    for r in found:
        by_shape.setdefault(json.dumps(r["shape"], sort_keys=True), []).append(r)
    for key, group in by_shape.items():
        if len(group) > 1:
            # a reading some samples cannot give (NaN) is summed over those that give it
            got = {c: [g for g in group if math.isfinite(g[c])] for c in RATIO_COLUMNS}
            spread = " ".join(f"{max(g[c] for g in got[c]) / min(g[c] for g in got[c]):9.4f}" if got[c] else f"{'-':>9s}"
                              for c in RATIO_COLUMNS)
            lines.append(f"{'max/min ' + key:44.44s} {spread}")
            # how far each reading is from the runners' own events, evaluation by evaluation
            errs = {c: [g[c] / g["device"] - 1 for g in got[c]] for c in RATIO_COLUMNS}
            rms = " ".join(f"{100 * math.sqrt(sum(e * e for e in errs[c]) / len(errs[c])):8.2f}%" if errs[c] else f"{'-':>9s}"
                           for c in RATIO_COLUMNS)
            lines.append(f"{'rms off device ' + key:44.44s} {rms}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("samples", type=Path, nargs="+")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    paths = files(args.samples)
    found = rows(paths)
    if not found:
        print(f"no samples under {' '.join(map(str, args.samples))}", file=sys.stderr)
        return 1
    print(table(found))
    print()
    print(ratio_table(ratios(paths)))
    print()
    print(overhead_parts(paths))
    print()
    print(freshness(paths))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
