"""A competition's standings as JSON Lines: one entry a line. `manage.py export --competition SLUG`
and the competition page's download both write what `competition_export_lines` yields.

Each line: the competition, task, device type, rank (null for an entry a disqualification took
out, which then carries `disqualified`: when and why), user, submission id and upload time, the
verdict it entered with, the speedups and per-shape medians as they were frozen, the part of the
report the public result page shows, and the source only when its code is open to every visitor
(selectors.code_open_reason).

The report is copied through an allow-list, not as stored: what the evaluator records about how it
ran (the isolation, the sanitizer's output, the compile cache, the timing gate, the ceilings) is
for staff, and a field added to the report later stays out until someone decides it is public.
The kernels the judge saw launched and the runner's logs say what the code does, so they follow
the code: only when it is open.
"""
from __future__ import annotations

import json
from collections.abc import Iterator

from leaderboard import selectors
from leaderboard.models import Competition
from leaderboard.selectors.competitions import disqualifications, frozen_entries

SHAPE_KEYS = ("shape", "candidate_ms", "eager_ms", "compile_ms", "floor_ms", "speedup_vs_compile", "speedup_vs_eager")
# what the result page shows to every visitor who may see the result
REPORT_KEYS = ("schema", "task", "mode", "device", "gpu_name", "verdict", "reasons", "reason_codes", "versions",
               "speedup_vs_compile", "speedup_vs_eager", "tests", "phases")
# per shape: the medians, the floor, the speedups, and the spread the page draws as whiskers
REPORT_SHAPE_KEYS = SHAPE_KEYS + tuple(f"{side}_{q}_ms" for side in ("candidate", "eager", "compile")
                                       for q in ("p10", "p90"))
OPEN_CODE_KEYS = ("kernels_launched", "logs")


class NotReady(Exception):
    """The standings are not frozen yet: nothing final to export."""


def _iso(dt) -> str | None:
    return dt.isoformat() if dt else None


def public_report(report, *, code_open: bool) -> dict:
    """The allowed fields of a frozen report (an evaluator.Report, or None: no fields); the kernels
    launched and the logs only with open code."""
    if report is None:
        return {"shapes": []}
    keys = REPORT_KEYS + (OPEN_CODE_KEYS if code_open else ())
    as_json = report.to_json()
    out = {k: as_json[k] for k in keys}
    out["shapes"] = [{k: row[k] for k in REPORT_SHAPE_KEYS if k in row} for row in report.shape_dicts()]
    return out


def competition_export_lines(*, competition: Competition) -> Iterator[str]:
    """The export, a line (with its newline) at a time. Raises NotReady before the freeze."""
    if not competition.frozen_at:
        raise NotReady(f"The standings of {competition.slug} are not frozen yet: the competition closes "
                       f"{competition.closes_at:%Y-%m-%d %H:%M} UTC and freezes once every result "
                       "uploaded before then is in and every flagged one is reviewed.")
    entries = list(frozen_entries(competition=competition))
    removed = disqualifications([e.submission_id for e in entries if e.submission.hidden])
    open_reasons = selectors.code_open_reasons(submissions=[e.submission for e in entries])
    ranks: dict[tuple, int] = {}
    for entry in entries:
        sub = entry.submission
        open_reason = open_reasons[sub.pk]
        public = public_report(entry.typed_report, code_open=bool(open_reason))
        line = {
            "competition": competition.slug,
            "task": entry.task.name,
            "device": entry.device_type,
            "rank": None,
            "rank_at_freeze": entry.rank,
            "user": entry.user.get_username(),
            "submission": sub.pk,
            "uploaded_at": _iso(sub.created_at),
            "verdict": "verified",
            "disqualified": None,
            "speedup_vs_compile": entry.speedup_vs_compile,
            "speedup_vs_eager": entry.speedup_vs_eager,
            "pct_of_floor": entry.pct_of_floor,
            "shapes": [{k: row.get(k) for k in SHAPE_KEYS} for row in public["shapes"]],
            "report": public,
            "code_open": open_reason,
            "source": sub.source if open_reason else None,
        }
        if sub.hidden:
            audit = removed.get(sub.pk)
            line["verdict"] = sub.verdict
            line["disqualified"] = {"at": _iso(audit.created_at) if audit else None,
                                    "reason": audit.reason if audit else ""}
        else:
            board = (entry.task_id, entry.device_type)
            ranks[board] = ranks.get(board, 0) + 1
            line["rank"] = ranks[board]
        yield json.dumps(line, ensure_ascii=False, sort_keys=False) + "\n"
