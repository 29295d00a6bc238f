"""What the CLI (leaderboard/cli.py) prints: a submission's result, the list of one's submissions,
and the numbers in them. Standard library only: the CLI sets up no Django."""
from __future__ import annotations

import math
from datetime import datetime

from evaluator import status_word, verdict_word

TRYOUT_NOTE = ("CPU try-out: every correctness and integrity check ran in full, but the times are "
               "interpreter timings (Triton kernels run in its interpreter on a CPU): they show that the "
               "flow works, not how fast the kernel is, and are not comparable to GPU results.")
FLAGGED_NOTE = "Flagged results wait for an admin's review; one ranks only once it is approved."


def sig3(value) -> str:
    """A number to three significant digits, in plain notation from 0.0001 up: 0.001344 -> 0.00134,
    1.2 -> 1.20, 1234.5 -> 1230. A CPU try-out's speedups sit far below 1x, where a fixed number
    of decimals shows 0.001 or 0.000."""
    if value is None:
        return "-"
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    rounded = float(f"{value:.3g}")
    if abs(rounded) < 1e-4:
        return f"{value:.2e}"
    decimals = max(0, 2 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{decimals}f}"


def times(value) -> str:
    return "-" if value is None else f"{sig3(value)}x"


def when(iso: str | None) -> str:
    """An API time (ISO 8601, UTC) in this machine's time zone, to the minute."""
    if not iso:
        return "-"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def shape_label(shape) -> str:
    if isinstance(shape, dict):
        return ", ".join(f"{k}={v}" for k, v in shape.items())
    return str(shape)


def is_tryout(sub: dict) -> bool:
    return str(sub.get("device_type") or "").split(":", 1)[0] == "cpu"


def table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    """Columns padded to their widest cell, the ones in `right` aligned right (numbers)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(header), *(line(r) for r in rows)]


def verdict_lines(result: dict) -> list[str]:
    """The verdict in the site's words ("Verified (test run)"), each reason with its code, and the
    two speedups: the head of what this CLI and `manage.py evaluate` print."""
    word = verdict_word(result.get("verdict") or "", result.get("mode") or "ranked",
                        hidden=bool(result.get("hidden")))
    lines = [f"verdict: {word}"]
    lines += [f"  - [{code}] {reason}"
              for code, reason in zip(result.get("reason_codes") or [], result.get("reasons") or [])]
    lines += [f"{key}: {times(result[key])}{vs_compile_note(result) if key == 'speedup_vs_compile' else ''}"
              for key in ("speedup_vs_compile", "speedup_vs_eager") if result.get(key) is not None]
    return lines


# the site's words for a speedup's standing against torch.compile (leaderboard/scoring.py, vs_compile)
VS_COMPILE_WORDS = {"faster": "faster than torch.compile", "tie": "tie with torch.compile",
                    "slower": "slower than torch.compile"}


def vs_compile_note(result: dict) -> str:
    """" (tie with torch.compile: 0.97x to 1.03x; ranks at 1.00x)" after the speedup, from the API's
    vs_compile and its interval; "" where there is none (an evaluator report read locally, an
    older site)."""
    word = result.get("vs_compile")
    if word not in VS_COMPILE_WORDS:
        return ""
    low, high = result.get("vs_compile_low"), result.get("vs_compile_high")
    interval = f": {times(low)} to {times(high)}" if low is not None and high is not None else ""
    return f" ({VS_COMPILE_WORDS[word]}{interval}{'; ranks at 1.00x' if word == 'tie' else ''})"


def shape_lines(sub: dict) -> list[str]:
    """The per-shape table of the result page: times in ms and speedups, three significant digits;
    the share of the floor except on a try-out, where the floor only catches impossible times.
    The kernel's column says "yours" only to its owner (the API's `yours`), as the page does: a
    public entry is read by anyone."""
    tryout = is_tryout(sub)
    kernel = "yours ms" if sub.get("yours") else "kernel ms"
    header = ["shape", kernel, "eager ms", "compile ms", "floor ms"] + ([] if tryout else ["% of floor"]) \
        + ["vs compile", "vs eager"]
    rows = []
    for row in sub.get("shapes") or []:
        cells = [shape_label(row.get("shape"))] + [sig3(row.get(k)) for k in
                                                   ("candidate_ms", "eager_ms", "compile_ms", "floor_ms")]
        if not tryout:
            cells.append(sig3(row.get("pct_of_floor")))
        cells += [times(row.get("speedup_vs_compile")), times(row.get("speedup_vs_eager"))]
        rows.append(cells)
    if not rows:
        return []
    return table(header, rows, right=set(range(1, len(header))))


def print_result(sub: dict, out) -> None:
    """One submission as `show` prints it: what it is, its status, and once done its verdict,
    reasons, speedups, per-shape times, failed tests and profile."""
    w = out.write
    w(f"submission #{sub['id']}  task {sub['task']}  mode {sub['mode']}  device {sub['device_type']}"
      f"  uploaded {when(sub.get('created_at'))}\n")
    phase = f": {sub['phase']}" if sub.get("phase") and not sub.get("finished") else ""
    w(f"status: {status_word(sub['status'])}{phase}\n")
    if (sub.get("attempts") or 1) > 1:
        w(f"attempt {sub['attempts']}: an earlier attempt ended without a result (a worker lost, an infrastructure "
          "error) and the evaluation ran again from the start; not your code\n")
    if sub["status"] == "failed":
        w(f"error: {sub.get('error') or 'unknown'}\n")
        return
    if not sub.get("finished"):
        w(f"not finished yet: `python -m leaderboard.cli wait {sub['id']}` follows it to its result\n")
        return
    for line in verdict_lines(sub):
        w(line + "\n")
    if sub.get("verdict") == "flagged" and sub.get("mode") == "ranked":  # other modes never rank: no review
        w(FLAGGED_NOTE + "\n")
    if sub.get("pct_of_floor") is not None and not is_tryout(sub):
        w(f"share of the roofline floor: {sig3(sub['pct_of_floor'])}%\n")
    if is_tryout(sub) and sub.get("shapes"):  # the note is about times: a run without any has none to explain
        w(TRYOUT_NOTE + "\n")
    for line in shape_lines(sub):
        w(line + "\n")
    for t in sub.get("tests") or []:
        if not t.get("passed"):
            message = t.get("message") or ""
            w(f"  test {shape_label(t.get('shape'))} failed{': ' + message if message else ''}\n")
    if sub.get("gpu_name"):
        w(f"gpu: {sub['gpu_name']}\n")
    if sub.get("profile"):
        from evaluator import profile_summary

        w("\n".join(profile_summary(sub["profile"])) + "\n")
    if sub.get("page"):
        w(f"page: {sub['page']}\n")


def list_lines(results: list[dict]) -> list[str]:
    """The `list` table: one line per submission, newest first as the API gives them."""
    rows = [[f"#{s['id']}", s["task"], s["mode"], status_word(s["status"]),
             verdict_word(s.get("verdict") or "", s["mode"], hidden=bool(s.get("hidden"))) or "-",
             times(s.get("speedup_vs_compile")) + (" tie" if s.get("vs_compile") == "tie" else ""),
             when(s.get("created_at"))] for s in results]
    return table(["id", "task", "mode", "status", "verdict", "vs torch.compile", "uploaded"], rows, right={5})
