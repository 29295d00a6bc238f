"""The timing phase of a ranked evaluation: per benchmark shape, rounds of batches of each side
(candidate, eager, torch.compile; `round_order` says in which order), until the medians are stable
or the budget is spent. batch.py says what one batch is and why its time can be trusted; this
module turns batches into the report's per-shape rows and flags.
"""
from __future__ import annotations

import json
import math
import os
import time

from evaluator.judge import batch
from evaluator.contract import progress
from evaluator.common import timing
from evaluator.judge.touched import reason as touched_reason
from evaluator.judge.touched import flags as touched_flags
from evaluator.judge.touched import touched_rounds, untouched

SIDES = ("cand", "eager", "compile")
FLOOR_MARGIN = 0.9  # flag a median under 90 % of the roofline floor (the ceilings are measured)
# repetitions: (warm-up batches per side, min rounds, max rounds, target rel. SE of the medians,
# seconds of rounds per evaluation, shared evenly by its benchmark shapes: a task of two shapes
# costs no more time than one of one)
REPS = {
    # GPU: the budget ends the rounds, not the windows' spread. The error that matters is the gap
    # between the candidate's overhead and the baselines': each batch's overhead jitters by about
    # 0.1 ms, and across evaluations the gap moves as much as the medians' sampling error predicts
    # (docs/bench/judge-clock.md), so only more batches shrink it. The budget here is the least;
    # rounds_budget may give more. The windows look stable sooner
    "cuda": (1, 5, 60, 0.001, 10.0),
    # CPU: single calls here vary 10-20 % and drift between two speeds, so many short batches
    "cpu": (1, 12, 40, 0.01, 30.0),
    "quick": (1, 2, 2, 1.0, 5.0),
}
# GPU: the rounds may run on until the evaluation is this many seconds old, but for no more than
# ROUNDS_MAX_S in all: a task whose earlier phases are quick buys a smaller error with time the
# slowest task (transformer_block) spends before its timing starts, and that one keeps the least
# budget. EVALUATOR_ROUNDS_UNTIL_S (the operator's, for bench/judge_clock.py's `ab` step) moves it;
# 0 leaves every task the least budget
ROUNDS_UNTIL_S = 34.0
ROUNDS_MAX_S = 24.0
# a shape's share of the budget (and the evaluation's time limit) may end timing after this many rounds
# even when min_rounds asks for more
BUDGET_ROUNDS = 3
# Every batch of every side follows a fresh write of its inputs, with its runner stopped while the
# checker writes them. Only the candidate needs inputs it has never seen, but a baseline batch run
# again on its last inputs follows a short stop instead of a long one, and on an H200 that alone
# made its overhead (waking the runner above all) about 0.1 ms shorter than the candidate's, which
# moved softmax's score by up to 1 % (docs/bench/judge-clock.md). EVALUATOR_REUSE_BASE_INPUTS=1
# (the operator's, for bench/judge_clock.py's `ab` step) reruns the baselines on their last inputs
# for three rounds of four.
REFILL_EVERY = 4


def reuse_base_inputs() -> bool:
    return os.environ.get("EVALUATOR_REUSE_BASE_INPUTS", "0") == "1"


def rounds_budget(ev, least: float) -> float:
    """Seconds of timed rounds for the whole evaluation (shared by its benchmark shapes)."""
    if ev.setup.quick:
        return least
    if ev.device != "cuda":
        # EVALUATOR_CPU_ROUNDS_S (the operator's; the CPU ruler's test takes 12 s) replaces it
        return _seconds("EVALUATOR_CPU_ROUNDS_S", least)
    until = _seconds("EVALUATOR_ROUNDS_UNTIL_S", ROUNDS_UNTIL_S)
    return min(max(least, until - (time.monotonic() - ev.t0)), max(least, ROUNDS_MAX_S))


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


def stop_rounds(done: int, *, stable: bool, over: bool, min_rounds: int) -> bool:
    """Stable counts from min_rounds; the budget and the time limit from BUDGET_ROUNDS."""
    return (done >= min_rounds and stable) or (done >= min(min_rounds, BUDGET_ROUNDS) and over)


class Phase:
    """`ev`: the Evaluation (task, device, ceilings, seeds, deadline, codes); `sides`: name ->
    batch.Side; `checkers`: "cand" / "base" -> the checker serving that runner."""

    def __init__(self, ev, sides: dict, checkers: dict):
        self.ev, self.sides, self.checkers = ev, sides, checkers
        self.reps = REPS["quick" if ev.setup.quick else ev.device]
        self.budget_s = self.reps[4]  # seconds of rounds, set when run() starts
        self.reuse = reuse_base_inputs()
        self.samples = []
        self.base_written = None  # calls the baselines' buffer last got fresh inputs for

    def run(self) -> list[dict]:
        self.budget_s = rounds_budget(self.ev, self.reps[4])
        rows = [self.shape(j, shape) for j, shape in enumerate(self.ev.setup.bench_shapes)]
        _write_samples(self.ev.task_name, self.samples, self.ev.pinned_cores)
        return rows

    def shape(self, j: int, shape: dict) -> dict:
        ev = self.ev
        where = f"benchmark shape {_fmt(shape)}"
        plan = self.checkers["cand"].plan(shape)
        self.checkers["base"].plan(shape)
        count = iter(range(1 << 30))

        def run(side: str, calls: int, first: bool = False) -> batch.Timed:
            seeds = [ev.derive(ev.master, "bench", j, side, next(count)) for _ in range(calls)]
            limit = time.monotonic() + (ev.first_call_limit_s if first else ev.call_limit_s)
            ev.note_call_limit(first)
            base = side != "cand"
            # checked batches, and every candidate batch, get inputs written for them
            fresh = not base or first or not self.reuse or self.base_written != calls
            got = self.sides[side].batch(seeds, device=ev.device, out_bytes=plan["out_bytes"], deadline=limit,
                                         where=where, check=first or side == "cand", fresh=fresh)
            if base and fresh:
                self.base_written = calls
            return got

        # size the batches: the eager baseline on its own clock, the candidate on the judge's
        started = time.monotonic()
        kind = "quick" if ev.setup.quick else ev.device
        sizing = batch.SIZING_CALLS[kind]
        self._map(plan, {"cand": sizing, "eager": sizing})
        run("eager", sizing, first=True)
        run("cand", sizing, first=True)
        eager = run("eager", sizing)
        eager_ms = eager.device_ms / sizing
        cand_ms = None
        if ev.device != "cuda":
            # the candidate's batches are cut only when it is slow in both of two sizing batches,
            # net of the overhead the eager batch just showed: one stall of this shared machine
            # must not leave it a few calls a batch, whose times would be mostly overhead
            spare = max(eager.window_ms - eager.device_ms, 0.0)
            cand_ms = max(min(run("cand", sizing).window_ms for _ in range(2)) - spare, 0.0) / sizing
        k_base, k_cand = batch.calls_per_batch(ev.device, eager_ms=eager_ms, cand_ms=cand_ms,
                                               slot_bytes=plan["slot_bytes"], out_bytes=plan["out_bytes"],
                                               quick=ev.setup.quick)
        calls = {"cand": k_cand, "eager": k_base, "compile": k_base}
        self._map(plan, calls)
        sized = time.monotonic()
        warmup = self.reps[0]
        for w in range(warmup):
            for side in SIDES:
                run(side, calls[side], first=(w == 0 and side == "compile"))
        warm = time.monotonic()
        got, rounds = self.rounds(run, calls)
        ended = time.monotonic()
        row = self.row(shape, where, calls, got, rounds)
        # where the shape's time went, for the samples (docs/bench/judge-clock.md)
        self.samples[-1]["spent"] = {"sizing_s": sized - started, "warmup_s": warm - sized, "rounds_s": ended - warm,
                                     "budget_s": self.budget_s / len(ev.setup.bench_shapes)}
        return row

    def rounds(self, run, calls: dict) -> tuple[dict, dict]:
        """The timed rounds of a shape, until the medians are stable or its share of the budget is
        spent: (side -> its batches, side -> the round of each)."""
        ev = self.ev
        _, min_rounds, max_rounds, target, _ = self.reps
        budget = self.budget_s
        got, rounds = {side: [] for side in SIDES}, {side: [] for side in SIDES}
        started = time.monotonic()
        shape_no = len(self.samples) + 1  # the rows of the shapes before this one
        for r in range(max_rounds):
            progress.note("timing", shape=shape_no, shapes=len(ev.setup.bench_shapes), round=r + 1,
                          rounds_max=max_rounds)
            if r and r % REFILL_EVERY == 0:
                self.base_written = None
            for side in round_order(r, ev.device):
                got[side].append(run(side, calls[side]))
                rounds[side].append(r)
            ev.check_threads("during timing", "timing")
            stable = all(timing.rel_se_of_median([t.window_ms for t in got[s]]) <= target for s in SIDES)
            over = time.monotonic() - started > budget / len(ev.setup.bench_shapes) or ev.short_of_time()
            if stop_rounds(r + 1, stable=stable, over=over, min_rounds=min_rounds):
                break
        return got, rounds

    def _map(self, plan: dict, calls: dict) -> None:
        """A buffer of calls[side] slots from each checker, mapped by its runner (eager and
        compile share the baseline runner, and its buffer: calls["eager"] slots)."""
        deadline = time.monotonic() + self.ev.call_limit_s
        self.base_written = None
        for side in ("cand", "eager"):
            checker = self.checkers["cand" if side == "cand" else "base"]
            self.sides[side].map_inputs(checker.buffer(calls[side]), plan, calls[side], deadline)

    def row(self, shape: dict, where: str, calls: dict, got: dict, rounds: dict) -> dict:
        ev = self.ev
        every, every_round = got, rounds  # the samples keep them all
        # GPU: rounds that ran beside other work on the device are not scored (touched.py)
        touched = touched_rounds(got, rounds) if ev.device == "cuda" else {}
        left_out = 0
        if touched:
            total = len(set(rounds["cand"]))
            got, rounds = untouched(got, rounds, touched)
            left_out = total - len(set(rounds["cand"]))
            if touched_flags(touched, total):
                ev.codes.append(("extra_threads", touched_reason(where, touched, total, scored=left_out > 0)))
        scored = score(got, rounds, calls, ev.device)
        times, overheads = scored["times"], scored["overheads"]
        overhead = overheads["cand"]
        c, e, k = (timing.median(times[s]) for s in SIDES)
        floor = ev.setup.task.floor_ms(shape, bandwidth_bytes_s=ev.setup.ceilings["bandwidth_bytes_s"],
                                       peak_flop_s=ev.setup.ceilings["peak_flop_s"])
        row = {"shape": dict(shape), "candidate_ms": c, "eager_ms": e, "compile_ms": k,
               "wall_ms": timing.median([t.window_ms for t in got["cand"]]) / calls["cand"], "floor_ms": floor,
               "speedup_vs_compile": scored["speedup_vs_compile"], "speedup_vs_eager": scored["speedup_vs_eager"],
               "speedup_vs_compile_rel_se": scored["speedup_vs_compile_rel_se"],
               "speedup_rounds": scored["speedup_rounds"],
               "calls_per_batch": calls["cand"], "batches": len(got["cand"]), "overhead_ms": overhead,
               "rounds_left_out": left_out}
        for side, name in zip(SIDES, ("candidate", "eager", "compile")):
            row[f"{name}_p10_ms"] = timing.quantile(times[side], 0.1)
            row[f"{name}_p90_ms"] = timing.quantile(times[side], 0.9)
        self.samples.append({"shape": dict(shape), "calls": calls, "overhead_ms": overhead, "overheads": overheads,
                             "rounds": every_round,
                             "touched": {str(r): [str(w) for w in why] for r, why in touched.items()},
                             **{side: [vars(t) for t in every[side]] for side in SIDES}})
        if c < FLOOR_MARGIN * floor:
            ev.codes.append(("below_floor", f"{where}: {c:.4g} ms is below the roofline floor of "
                                            f"{floor:.4g} ms (impossible on this device)"))
        limit = ev.setup.task.max_speedup_vs_compile
        if row["speedup_vs_compile"] and row["speedup_vs_compile"] > limit:
            ev.codes.append(("too_fast_vs_compile", f"{where}: {row['speedup_vs_compile']:.2f}x faster "
                                                    f"than torch.compile (above this task's {limit:g}x)"))
        return row

def overheads(got: dict, device: str) -> dict:
    """The overhead (ms a batch) taken off each side's windows. GPU: each baseline side its own
    (its windows less its own events, median), the candidate the line through them at its
    median window (batch.candidate_overhead). CPU: one median over every baseline batch for
    all three sides, whose batches there differ in calls rather than in length alone."""
    if device != "cuda":
        pooled = batch.overhead_ms(got["eager"] + got["compile"])
        return {side: pooled for side in SIDES}
    own = {side: batch.overhead_ms(got[side]) for side in ("eager", "compile")}
    points = [(timing.median([t.window_ms for t in got[side]]), own[side]) for side in own]
    cand = batch.candidate_overhead(timing.median([t.window_ms for t in got["cand"]]), points)
    return {"cand": cand, **own}


def score(got: dict, rounds: dict, calls: dict, device: str) -> dict:
    """The scored numbers of one shape from its batches (side -> batch.Timed) and their rounds:
    each side's time per call, the overheads taken off, and the two speedups. The judge's row and
    the replay of recorded batches (tests/evaluator/judge/test_judge_touched_replay.py) both come from here."""
    spent = overheads(got, device)
    times = {side: batch.per_call(got[side], spent[side], calls[side]) for side in SIDES}
    per_round = {side: by_round(times[side], rounds[side]) for side in SIDES}
    ratios = round_ratios(per_round["compile"], per_round["cand"])
    return {"times": times, "overheads": spent,
            "speedup_vs_compile": timing.median(ratios) if ratios else None,
            "speedup_vs_eager": round_ratio(per_round["eager"], per_round["cand"]),
            "speedup_vs_compile_rel_se": ratio_rel_se(ratios), "speedup_rounds": len(ratios)}


def round_order(r: int, device: str) -> list[str]:
    """The batches of round r, in order. GPU: the candidate's runner and the baseline runner take
    turns batch by batch (candidate, one baseline, candidate, the other; the baselines swap each
    round), so no batch ever follows one of its own process. On an H200 a baseline batch right
    after the baseline runner's previous one carries about 0.05 ms less overhead than one after
    the candidate's, a discount the candidate, always after the other process, never gets
    (docs/bench/judge-clock.md). CPU: one batch per side, the order rotated each round so that no
    side always follows another; the candidate's batches there are the long ones (the Triton
    interpreter), and overhead is a pooled median (Phase.overheads). EVALUATOR_ROUND_ORDER=rotate
    (the operator's, for bench/judge_clock.py's `ab` step) rotates on the GPU too."""
    if device == "cuda" and os.environ.get("EVALUATOR_ROUND_ORDER", "alternate") != "rotate":
        first, second = ("eager", "compile") if r % 2 == 0 else ("compile", "eager")
        return ["cand", first, "cand", second]
    return list(SIDES[r % 3:] + SIDES[:r % 3])


def by_round(values: list[float], rounds: list[int]) -> list[float]:
    """The mean of each round's values, in round order (the candidate has two batches a round on
    the GPU, each baseline side one)."""
    groups: dict[int, list[float]] = {}
    for value, r in zip(values, rounds):
        groups.setdefault(r, []).append(value)
    return [sum(v) / len(v) for _, v in sorted(groups.items())]


def round_ratios(base: list[float], cand: list[float]) -> list[float]:
    """Each round's baseline time per call over the candidate's in the same round."""
    return [b / c for b, c in zip(base, cand) if c > 0]


def round_ratio(base: list[float], cand: list[float]) -> float | None:
    """The speedup: the median over rounds of the baseline's time per call over the candidate's in
    the same round. The batches of a round run within a second or two of each other, so a
    machine that drifts between speeds over seconds (the shared CPU does) moves both alike."""
    ratios = round_ratios(base, cand)
    return timing.median(ratios) if ratios else None


def ratio_rel_se(ratios: list[float]) -> float | None:
    """How uncertain the median of these per-round ratios is, relative to it: the site's tie rule
    (leaderboard/scoring.py, vs_compile) widens the score's interval by it. From three rounds the
    relative standard error of the median (timing.rel_se_of_median, robust to an odd round); of
    two, the standard error of their mean, |a - b| / (a + b), which is their median; of one or
    none, None: one round says nothing of the spread, and the site then uses the ruler's band
    alone."""
    if len(ratios) >= 3:
        se = timing.rel_se_of_median(ratios)
        return se if math.isfinite(se) else None
    if len(ratios) == 2 and sum(ratios) > 0:
        return abs(ratios[0] - ratios[1]) / sum(ratios)
    return None


def _fmt(shape: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in shape.items()) + "}"


def _write_samples(task: str, samples: list, pinned: dict | None = None) -> None:
    """With EVALUATOR_SAMPLES_DIR set (the operator's, for bench/ runs), every batch of every side
    (window, the runner's own time, the checker's input time) goes to a JSON file there, with the
    cores the processes were pinned to (affinity.py), if they were."""
    where = os.environ.get("EVALUATOR_SAMPLES_DIR")
    if not where:
        return
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, f"{task}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json")
    with open(path, "w") as f:
        json.dump({"task": task, "shapes": samples, "pinned": pinned}, f)

