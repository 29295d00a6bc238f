"""One word per state, for people: the pages, the admin, the command lines, the logs.

The values (`"verdict": "verified"`, `"status": "done"`, `"mode": "test"`) stay what the report
and the API write, a contract scripts read; these are the same words, written for a person. The
table lives here, standard library only, because this is the one package every face may import:
the judge's and the box's command lines, the site's pages, admin and CLI (docs/site.md, "One
word per state").
"""
from __future__ import annotations

import math

VERDICT_WORDS = {"verified": "Verified", "flagged": "Flagged", "rejected": "Rejected"}
# a run that is never ranked says so after its verdict: "Verified (test run)"
RUN_WORDS = {"test": "test run", "profile": "profile run"}
STATUS_WORDS = {"queued": "Queued", "running": "Running", "done": "Done", "failed": "Failed"}
# a result an admin disqualified (the site stores it as rejected and hidden)
DISQUALIFIED = "Disqualified"


def verdict_word(verdict: str, mode: str = "ranked", *, hidden: bool = False) -> str:
    """"Verified", "Verified (test run)", "Flagged", "Rejected", "Disqualified"."""
    if hidden:
        return DISQUALIFIED
    word = VERDICT_WORDS.get(verdict, verdict or "")
    run = RUN_WORDS.get(mode)
    return f"{word} ({run})" if run and word else word


def status_word(status: str) -> str:
    return STATUS_WORDS.get(status, status or "")


def state_word(*, status: str, verdict: str = "", mode: str = "ranked", hidden: bool = False) -> str:
    """What a submission is now, in one word: its verdict once it has one, else its status."""
    if status == "done" and (verdict or hidden):
        return verdict_word(verdict, mode, hidden=hidden)
    return status_word(status)


def significant(value: float, digits: int = 3) -> str:
    """A measured number to `digits` significant digits, as the pages, the logs and the command
    lines all write one: 0.00296, 1.25, 357, 12,345; an exponent only below about 1e-6. A median
    of timed calls is good to two or three digits at best: a fixed number of decimals shows 0.003
    for a CPU try-out's 0.00296 and noise for a large number."""
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(v)))
    if magnitude >= digits:
        return f"{v:,.0f}"
    decimals = digits - 1 - magnitude
    if decimals > 7:
        return f"{v:.{digits - 1}e}"
    return f"{v:.{decimals}f}"
