"""How scoring works: the score, the judge, the checks, the verdicts, the CPU try-out and the
ruler, in the words of the manual (docs/evaluator.md, docs/site.md). The numbers on the page (the
flag thresholds, the ruler's bounds, the noisy spread, the reasons) are read from the code that
applies them, so the page cannot drift from it."""
from __future__ import annotations

from django.shortcuts import render

from evaluator import CODES, verdict_for
from leaderboard import routing, scoring
from leaderboard.models import Task
from leaderboard.web.present import device_label
from leaderboard.web.result import REASON_WORDS, is_tryout

# kept in reports made under an earlier clock; this judge never raises it (docs/evaluator.md, Flags)
RETIRED = ("clock_disagreement",)


def _reasons(verdict: str) -> list[dict]:
    return [{"code": code, "words": REASON_WORDS.get(code, code)}
            for code in CODES if code not in RETIRED and verdict_for([code]) == verdict]


def scoring_page(request):
    device_type = routing.default_device_type()
    return render(request, "web/scoring.html", {
        "tasks": Task.objects.order_by("name").only("name", "title", "max_speedup_vs_compile"),
        "flags": _reasons("flagged"),
        "rejections": _reasons("rejected"),
        "gpu_bound": scoring.CALIBRATION_TOLERANCE["cuda"],
        "cpu_bound": scoring.CALIBRATION_TOLERANCE["cpu"],
        "noisy_pct": round(scoring.NOISY_BAND * 100),
        "tie_z": f"{scoring.TIE_SPREAD_Z:g}",
        "device_name": device_label(device_type),
        "tryout": is_tryout(device_type),
    })
