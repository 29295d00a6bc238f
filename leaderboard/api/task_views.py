"""The tasks and their leaderboards in the JSON API: public reads, the same for every caller, so
kept per address and data fingerprint like the public pages."""
from types import SimpleNamespace
from typing import Optional

from django.http import HttpResponse
from django.urls import reverse
from ninja import Router

from leaderboard import routing, selectors
from leaderboard.api.errors import Refusal, documented
from leaderboard.api.schemas import Leaderboard, TaskList
from leaderboard.api.views import iso_utc, link, render, vs_compile_json
from leaderboard.models import Task
from leaderboard.web import pagecache

tasks = Router(tags=["tasks"])


def _public(request, schema, build, reads: tuple[str, ...] = ()) -> HttpResponse:
    """A public read, the same for every caller: its JSON kept per address (the query parameters
    it reads, `reads`, and no other) and data fingerprint,
    as the public pages are (leaderboard/web/pagecache.py: a change shows within seconds, one
    request rebuilds while the others get the previous bytes). The body is checked against its
    schema when it is built, as ninja checks the others on each answer. A refusal is never kept."""
    query = pagecache.only_read(request, reads)  # an unread ?x=<random> keys no new entry
    key = "api:" + request.build_absolute_uri(request.path) + ("?" + query if query else "")
    body = pagecache.cached(key, lambda: render(schema, build()))
    return pagecache.offer(request, HttpResponse(body, content_type="application/json"), key, body)


@tasks.get("/tasks", summary="Tasks", url_name="tasks", response={200: TaskList, **documented()})
def task_list(request):
    """Every task, with its best ranked speedup over torch.compile, its number of evaluations (every
    mode and outcome) and of verified ranked results."""
    return _public(request, TaskList, lambda: {"tasks": [
        {"name": t.name, "title": t.title, "signature": t.signature, "track": t.track, "retired": t.retired,
         "best_speedup_vs_compile": t.best_speedup, "best_vs_compile": t.best_vs_compile or None,
         "submissions": t.submission_count, "verified_ranked": t.ranked_count,
         "leaderboard": request.build_absolute_uri(reverse("api:leaderboard", args=[t.name]))}
        for t in selectors.task_list_with_stats()
    ]})


@tasks.get("/tasks/{slug:name}/leaderboard", summary="A task's leaderboard", url_name="leaderboard",
           response={200: Leaderboard, **documented(400, 404)})
def leaderboard(request, name: str, device: Optional[str] = None):
    """The ranked entries of one device type (default: the site's own); `device_types` lists the
    boards there are."""
    return _public(request, Leaderboard, lambda: _board(request, name, device), reads=("device",))


def _board(request, name: str, device: Optional[str]) -> dict:
    task = Task.objects.filter(name=name).first()
    if task is None:
        raise Refusal(404, f"No task named {name!r}.", "unknown_task")
    device_types = selectors.device_types_for_task(task=task)
    device_type = device or routing.default_device_type()
    # the boards that exist: the task's device types and the one this site evaluates on; any
    # other name is a typo, answered as one rather than as an empty board of that name
    known = sorted(set(device_types) | {routing.default_device_type()})
    if device_type not in known:
        raise Refusal(400, f"No device type {device_type[:80]!r} for task {task.name!r}: use one of "
                           f"{', '.join(known)}.", "unknown_device", device_types=known)
    rows = selectors.leaderboard_rows_for_task(task=task, device_type=device_type)
    code_open = selectors.code_open_reasons(submissions=[SimpleNamespace(**row) for row in rows])
    return {
        "task": task.name,
        "device_type": device_type,
        "device_types": device_types,
        "entries": [
            {"rank": r["rank"], "user": r["user__username"], "submission": r["pk"],
             "page": link(request, "submission_detail", r["pk"]),
             "code_open": bool(code_open[r["pk"]]),
             "speedup_vs_compile": r["speedup_vs_compile"], **vs_compile_json(r),
             "speedup_vs_eager": r["speedup_vs_eager"], "median_ms": r["median_ms"], "noisy": r["noisy"],
             "pct_of_floor": r["pct_of_floor"], "gpu_name": r["gpu_name"], "created_at": iso_utc(r["created_at"])}
            for r in rows
        ],
    }
