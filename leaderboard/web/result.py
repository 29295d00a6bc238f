"""What a result page says in words: the verdict and its one line of why, the checks, the phases.

The numbers themselves come from leaderboard.selectors.shape_rows; the filters in
leaderboard/templatetags/numbers.py print them.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from django.utils import timezone

from evaluator import status_word, verdict_for, verdict_word
from leaderboard.models import Submission
from leaderboard.services.audit import DISQUALIFIED_PREFIX
from leaderboard.services.submissions import QUEUED_PHASE
from leaderboard.templatetags.numbers import significant

# Every reason code in words, for the owner and the auditor: what the judge saw and what it means.
REASON_WORDS = {
    "bad_upload": "The file could not be read as a Python module.",
    "no_custom_kernel": "The file defines no top-level custom_kernel (or ModelNew, for a KernelBench-style task).",
    "params_mismatch": "ModelNew's parameters do not match the reference Model's (names or shapes).",
    "import_error": "Importing the file failed.",
    "crash": "The kernel crashed.",
    "timeout": "The run went past its time limit.",
    "out_of_memory": "The kernel ran out of memory.",
    "needs_gpu": "The kernel compiles CUDA code and needs a GPU.",
    "protocol": "The kernel's process broke the judge's protocol.",
    "wrong_type": "The output is not a tensor.",
    "wrong_dtype": "The output has the wrong dtype.",
    "wrong_shape": "The output has the wrong shape.",
    "wrong_device": "The output is on the wrong device.",
    "mismatch": "The output differs from the reference beyond the tolerance.",
    "nonfinite": "The output has inf or NaN where the reference is finite.",
    "aliases_input": "The output shares memory with an input.",
    "aliases_output": "The output shares memory with an earlier output.",
    "input_modified": "The kernel changed its input.",
    "deferred_write": "The output changed after the call returned.",
    "nondeterministic": "Two calls on the same input gave different answers.",
    "sandbox": "The sandbox stopped the run.",
    "below_floor": "A time is below the roofline floor: faster than the device can be.",
    "clock_disagreement": "The kernel's own clock and the judge's disagree.",
    "too_fast_vs_compile": "Much faster than torch.compile: held for a person to check.",
    "suspicious_source": "The code uses constructs that can game a benchmark.",
    "no_kernel_launched": "No kernel of the submission was seen running on the device.",
    "extra_threads": "The kernel left threads running.",
    "sanitizer": "The memory sanitizer reported a problem.",
    "gpu_throttled": "The GPU lowered its clocks (heat or power) while the kernel was timed.",
    "disqualified": "Disqualified by an admin.",
}

# no_kernel_launched where the submission's own kernels did run: the judge found library calls
# (torch operators on operands half the output's size, or a quarter of the task's FLOPs) doing the
# work beside them (evaluator/common/opcount.py)
LIBRARY_WORK_WORDS = "Library calls did a large share of the task's work, not the submission's own kernels."

PHASE_WORDS = {
    "setup_s": "set-up", "startup_s": "start-up", "compile_s": "compile", "correctness_s": "correctness checks",
    "timing_s": "timing", "profile_s": "profile", "close_s": "clean-up", "sanitizer_s": "sanitizer",
    "sandbox_s": "sandbox",
}

_MAX_ABS = re.compile(r"max abs error ([-+0-9.eE]+|inf|nan)")
_LINE = re.compile(r"\bline (\d+)\b")


def is_tryout(device_type: str) -> bool:
    """Runs on a CPU are a try-out: every check is made, but the times are the interpreter's."""
    return device_type.split(":", 1)[0] == "cpu"


# a first word of plain lower-case letters, which a sentence capitalises; not a name such as
# custom_kernel, torch.compile or triton.jit, which keeps its case
_PLAIN_FIRST_WORD = re.compile(r"[a-z]+(?=[\s,:;]|$)")


def sentence(text: str) -> str:
    """A judge's reason as a sentence of its own, for a line that follows a full stop ("An admin will
    look at it. No kernel ran ...", "The kernel crashed. Killed by signal 11"): a first word of plain
    lower-case letters capitalised, a full stop at the end where it has none, and no Markdown
    backticks (the judge writes `custom_kernel`; a page shows plain text)."""
    text = (text or "").replace("`", "").strip()
    if not text:
        return text
    if _PLAIN_FIRST_WORD.match(text):
        text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def reasons(submission: Submission) -> list[dict]:
    codes = list(submission.reason_codes or [])
    out = []
    for i, text in enumerate(submission.reasons or []):
        text = sentence(text)
        code = codes[i] if i < len(codes) else ""
        words = reason_words(code, submission)
        if words and text.startswith(words.rstrip(".")):  # the text says it already ("Disqualified by an admin: ...")
            words = ""
        out.append({"text": text, "code": code, "words": words})
    return out


def reason_words(code: str, submission: Submission) -> str:
    """The code in words; no_kernel_launched says which of its two findings the judge made."""
    if code == "no_kernel_launched" and own_kernels(submission):
        return LIBRARY_WORK_WORDS
    return REASON_WORDS.get(code, "")


def own_kernels(submission: Submission) -> list[str]:
    """The submission's kernels the judge saw run (report's kernels_launched). A list that defers
    the report annotates them as `kernels_launched` (selectors.audit_queue)."""
    if "kernels_launched" in submission.__dict__:
        kernels = submission.__dict__["kernels_launched"]
    else:
        report = submission.typed_report
        kernels = list(report.kernels_launched) if report else []
    return kernels if isinstance(kernels, list) else []


def finding_lines(submission: Submission) -> list[int]:
    """Source lines the scan named in its `suspicious_source` reasons ("... line 12: ...")."""
    lines = set()
    for code, text in zip(submission.reason_codes or [], submission.reasons or []):
        if code == "suspicious_source":
            lines.update(int(n) for n in _LINE.findall(text))
    return sorted(lines)


def verdict(submission: Submission, *, noisy: bool, device_name: str) -> dict:
    """{"title", "why", "tone"}: what happened, in one line each."""
    s = submission
    first = sentence((s.reasons or [""])[0])
    # each title starts with the state's word (evaluator.contract.words), the same word as every other page
    word = verdict_word(s.verdict, s.mode, hidden=s.hidden)
    if s.status == Submission.Status.QUEUED:
        # the title says what the plain queued phase would: the line says only more than that
        more = s.phase if s.phase and s.phase != QUEUED_PHASE else ""
        return {"tone": "pending", "title": f"{status_word(s.status)}: waiting for a worker",
                "why": more or "It starts when a worker of its device is free; this page follows it."}
    if s.status == Submission.Status.RUNNING:
        return {"tone": "pending", "title": f"{status_word(s.status)}: being evaluated",
                "why": s.phase or "running"}
    if s.status == Submission.Status.FAILED:
        return {"tone": "bad", "title": f"{status_word(s.status)}: the evaluation could not run",
                "why": "An infrastructure problem, not your code; an admin can re-run it."}
    if s.hidden:
        # the reasons below say "Disqualified by an admin: <why>"; the box says the why alone
        last = (s.reasons or [""])[-1]
        why = last.removeprefix(DISQUALIFIED_PREFIX) if last.startswith(DISQUALIFIED_PREFIX) else ""
        return {"tone": "bad", "title": word,
                "why": f"An admin took it off every leaderboard{': ' + why if why else '.'}"}
    if s.verdict == Submission.Verdict.REJECTED:
        # the reason that rejected it, not an audit hint the scan wrote before it (imports ctypes)
        deciding = next((text for code, text in zip(s.reason_codes or [], s.reasons or [])
                         if verdict_for([code]) == "rejected"), first)
        return {"tone": "bad", "title": word, "why": sentence(deciding) or "A check failed."}
    if s.verdict == Submission.Verdict.FLAGGED:
        if s.mode != Submission.Mode.RANKED:  # never ranks: no review is waited for (selectors.flagged_queue)
            return {"tone": "warn", "title": f"{word}: never ranked",
                    "why": f"{first} A ranked run with this finding waits for an admin's review before it ranks."}
        return {"tone": "warn", "title": f"{word}: awaiting review, not ranked until approved",
                "why": f"An admin will look at it. {first}"}
    # verified
    if s.mode == Submission.Mode.PROFILE:
        n = _test_count(s)
        return {"tone": "ok", "title": word,
                "why": f"Passed all {n} test shapes, then ran under the profiler on one benchmark shape: "
                       "the profile is below. Profile runs are not timed against the baselines and never rank."}
    if s.mode == Submission.Mode.TEST:
        n = _test_count(s)
        return {"tone": "ok", "title": word,
                "why": f"Passed all {n} test shapes. Test runs check correctness only: they are not timed "
                       "and never rank; submit in ranked mode to be timed."}
    sp = significant(s.speedup_vs_compile)
    # a speedup within the ruler's noise of 1.00 is said as a tie (scoring.vs_compile)
    tie = " (a tie with torch.compile: within the ruler's noise of 1.00x)" if s.vs_compile == "tie" else ""
    if is_tryout(s.device_type):
        why = (f"{sp}x the speed of torch.compile on the {device_name}{tie}: a try-out. Every check passed; "
               "the times are interpreter timings, not comparable to GPU results.")
    else:
        ranks = "it ranks as a tie at 1.00x" if tie else "it ranks"
        why = (f"{sp}x the speed of torch.compile on {device_name} (geometric mean over the benchmark "
               f"shapes){tie}; {ranks}.")
    if s.approved_by_id:
        why += " Approved after review."
    if noisy:
        why += " Noisy run: the timed calls spread widely, so the speedup is uncertain."
    return {"tone": "ok", "title": word, "why": why}


def _test_count(submission: Submission) -> int:
    report = submission.typed_report
    return len(report.tests) if report else 0


def tests(report) -> list[dict]:
    """The correctness checks of a report (evaluator.Report, or None); a failed one shows the max
    abs error its message names."""
    from leaderboard.web.present import shape_label

    out = []
    for t in report.tests if report else ():
        err = t.max_abs_err
        if err is None:
            found = _MAX_ABS.search(t.message)
            err = float(found.group(1)) if found else None
        out.append({"shape": shape_label(t.shape), "passed": t.passed, "max_abs_err": err, "message": t.message})
    return out


def tests_not_run(report, task) -> int:
    """How many of the task's test shapes an evaluation that stopped at a failed one never ran."""
    rows = report.tests if report else ()
    if not rows or all(t.passed for t in rows):
        return 0
    return max(0, len(task.test_shapes or []) - len(rows))


def phases(report) -> list[tuple[str, float]]:
    """The phases of a report (evaluator.Report, or None) that took time, in the order an
    evaluation runs them; any phase this site has no words for comes last."""
    order = list(PHASE_WORDS)
    given = report.phases.to_json() if report else {}
    items = []
    for key in sorted(given, key=lambda k: order.index(k) if k in order else len(order)):
        value = given[key]
        if isinstance(value, (int, float)) and value > 0:
            items.append((PHASE_WORDS.get(key, key.removesuffix("_s").replace("_", " ")), float(value)))
    return _compile_inside_setup(items)


def _compile_inside_setup(items: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The judge's set-up includes the baselines' compile when the compile runs alone (before the
    submission loads); on a warm cache it runs beside the correctness checks instead. Side by side,
    "set-up 38 s · compile 37 s" read as two phases, so a compile no longer than the set-up is
    shown right after it as part of it."""
    times = dict(items)
    if "set-up" not in times or "compile" not in times:
        return items
    if times["compile"] <= times["set-up"]:
        rest = [item for item in items if item[0] != "compile"]
        at = [name for name, _ in rest].index("set-up") + 1
        return rest[:at] + [("of which compile", times["compile"])] + rest[at:]
    return [("compile (beside the checks)", t) if name == "compile" else (name, t) for name, t in items]


def _mhz(r: dict, key: str) -> str:
    return "–" if r.get(key) is None else f"{r[key]:.0f} MHz"


def _power(r: dict) -> str:
    if r.get("power_w") is None:
        return "–"
    limit = r.get("power_limit_w")
    return f"{r['power_w']:.0f} W" + ("" if limit is None else f" of {limit:.0f} W")


# the rows of the GPU state's table: a label and how a reading (report's gpu_state) reads in it
GPU_ROWS = (
    ("SM clock", lambda r: _mhz(r, "sm_mhz")),
    ("Memory clock", lambda r: _mhz(r, "mem_mhz")),
    ("Temperature", lambda r: "–" if r.get("temp_c") is None else f"{r['temp_c']:.0f} °C"),
    ("Power", _power),
    ("Clock reasons", lambda r: ", ".join(r.get("reasons") or []) or "none"),
)


def gpu_state(report) -> dict | None:
    """The GPU's readings before and after timing as a table (None when the report, an
    evaluator.Report, has none): rows of (label, before, after), which GPU, and what NVML could not
    read."""
    state = report.gpu_state if report else None
    if not isinstance(state, Mapping):
        return None
    before, after = state.get("before") or {}, state.get("after") or {}
    gpu = next((r for r in (after, before) if r.get("index") is not None or r.get("uuid")), {})
    errors = [f"{when}: {r['error']}" for when, r in (("before", before), ("after", after)) if r.get("error")]
    return {"rows": [(label, show(before), show(after)) for label, show in GPU_ROWS],
            "index": gpu.get("index"), "uuid": gpu.get("uuid"), "errors": errors}


def versions(submission: Submission) -> list[tuple[str, str]]:
    """Library versions; a missing one (CUDA on a CPU run) is left out rather than shown as None."""
    return sorted((k, str(v)) for k, v in (submission.versions or {}).items() if v not in (None, "", "None"))


def elapsed_s(submission: Submission) -> float | None:
    """Seconds since the evaluation started (or since upload while queued); the run's duration
    once finished."""
    now = timezone.now()
    if submission.status == Submission.Status.RUNNING and submission.started_at:
        return (now - submission.started_at).total_seconds()
    if submission.status == Submission.Status.QUEUED and submission.created_at:
        return (now - submission.created_at).total_seconds()
    if submission.started_at and submission.finished_at:
        return (submission.finished_at - submission.started_at).total_seconds()
    return None
