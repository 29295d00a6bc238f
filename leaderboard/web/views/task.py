import re
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from leaderboard import routing, selectors
from leaderboard.models import Task
from leaderboard.web import charts
from leaderboard.web.pagecache import anonymous_page, cached
from leaderboard.web.present import (
    describe_for_device, device_label, highlight_python, json_script_raw, shape_label,
)
from leaderboard.web.result import is_tryout

# the table shows this many entries; the charts the top charts.TOP_N
LEADERBOARD_ROWS = 100
# the "over time" chart shows at most this many of the newest verified submissions
HISTORY_POINTS = 500


def starter_path(name: str) -> Path | None:
    """The task's starter kernel, examples/<task>.py: a plain, correct Triton kernel that passes
    every check, to download from the task page and improve on. None when there is none."""
    if not re.fullmatch(r"[a-z0-9_]+", name or ""):
        return None
    path = Path(settings.BASE_DIR) / "examples" / f"{name}.py"
    return path if path.is_file() else None


def task_starter(request, name):
    """The starter kernel as a download (Content-Disposition: attachment), for a task that exists
    and has one; else 404."""
    path = starter_path(name)
    if path is None or not Task.objects.filter(name=name).exists():
        raise Http404("No starter kernel for this task")
    response = HttpResponse(path.read_bytes(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.py"'
    return response


def _device_types(task: Task) -> list[str]:
    """The boards offered as tabs: device types with results and the one this site's workers
    evaluate on (routing.default_device_type); the first is the default board. That is the site's
    own device when it is a GPU, has results or no device has any, else the device with the most
    results. A CPU-only site thus opens on the CPU board, where its users' results are, and offers
    no GPU tab until a GPU result arrives; a GPU site opens on its GPU's board, where its uploads
    rank, even while only CPU try-outs have results."""
    own = routing.default_device_type()
    counts = selectors.device_types_with_results(task=task)
    offered = set(counts) | {own}
    own_first = not is_tryout(own) or bool(counts.get(own)) or not counts
    return sorted(offered, key=lambda d: (not (own_first and d == own), -counts.get(d, 0), d == "cpu", d))


def _board(task: Task, device_type: str) -> dict:
    board = selectors.leaderboard_for_task(task=task, device_type=device_type)
    entries = board[:LEADERBOARD_ROWS]
    # the board leaves reports out; the floor chart reads the top entries' per-shape times
    selectors.reports_attach(entries=entries[:charts.TOP_N])
    history = selectors.submission_history_for_task(task=task, device_type=device_type, limit=HISTORY_POINTS)
    floors = task.floors_for(device_type)
    code_open = selectors.code_open_reasons(submissions=entries)
    rows = [
        {
            "rank": i,
            "submission_id": e.pk,
            "user_id": e.user_id,
            "username": e.user.get_username(),
            "code_open": bool(code_open[e.pk]),
            "speedup_vs_compile": e.speedup_vs_compile,
            "speedup_vs_eager": e.speedup_vs_eager,
            "pct_of_floor": e.pct_of_floor,
            "median_ms": e.median_ms,
            "noisy": e.noisy,
            "vs_compile": e.vs_compile,
            "vs_compile_low": e.vs_compile_low,
            "vs_compile_high": e.vs_compile_high,
            "gpu_name": e.gpu_name or device_label(e.device_type),
            "date": e.finished_at,
        }
        for i, e in enumerate(entries, start=1)
    ]
    built = []
    on = f"on {device_label(device_type)}"
    if entries:
        built.append(("chart-top", f"Top speedups {on}", charts.top_speedups(entries)))
        built.append(("chart-history", f"Speedup over torch.compile over time {on}", charts.history(history)))
        if floors:
            built.append(("chart-floor", f"Time against the roofline floor {on}", charts.versus_floor(entries, floors)))
    figures = [(i, title, json_script_raw(fig, f"{i}-data")) for i, title, fig in built]
    # every user's best entry, for the "your entry" line (the table shows the top rows only)
    mine = {e.user_id: (rank, e.pk) for rank, e in enumerate(board, start=1)}
    return {"rows": rows, "figures": figures, "total": len(board), "mine": mine}


def _page(name: str, device_param: str | None) -> dict:
    """Everything on the task page that is the same for every viewer, rendered once."""
    task = Task.objects.filter(name=name).first()
    if task is None:
        return {"found": False}
    device_types = _device_types(task)
    device_type = device_param or device_types[0]
    if device_type not in device_types:
        # a device type the task has floors for is still a board to link to, shown as the
        # current tab while it is open, though it is not offered while it has no results
        if device_type not in selectors.device_types_for_task(task=task):
            return {"found": False}
        device_types = device_types + [device_type]
    board = _board(task, device_type)
    kind = device_type.split(":", 1)[0]
    bench_shapes = [shape_label(s) for s in (task.bench_shapes or {}).get(kind, [])]
    context = {
        "task": task,
        "description": describe_for_device(task.description, bench_shapes, device_label(device_type)),
        "tryout": is_tryout(device_type),
        "device_type": device_type,
        "device_name": device_label(device_type),
        "devices": [{"type": d, "label": device_label(d)} for d in device_types],
        "reference_html": highlight_python(task.reference_source) if task.reference_source else "",
        "test_shapes": [shape_label(s) for s in task.test_shapes],
        "hidden": task.hidden if task.hidden and task.hidden.get("count") else None,
        "bench_shapes": bench_shapes,
        "floors": [{"shape": shape_label(f["shape"]), "floor_ms": f["floor_ms"]} for f in task.floors_for(device_type)],
        "tolerance": [(k, f"{v:g}") for k, v in (task.tolerance or {}).items()],
        "calibration": selectors.calibration_for_task(task=task, device_type=device_type),
        "tie_bands": [{**band, "label": device_label(band["device_type"])}
                      for band in selectors.tie_bands_for_task(task=task, device_types=device_types)],
        **board,
    }
    return {
        "found": True,
        "title": task.title,
        "name": task.name,
        "has_figures": bool(board["figures"]),
        "retired": task.retired,
        "track": task.track,
        "track_label": selectors.track_label(task.track),
        "starter": starter_path(task.name) is not None,
        "html": render_to_string("web/_task_body.html", context),
        "mine": board["mine"],
    }


@anonymous_page(reads=("device",))
def task_detail(request, name):
    device_param = request.GET.get("device") or None
    page = cached(f"task:{name}:{device_param}", lambda: _page(name, device_param))
    if not page["found"]:
        raise Http404("No such task or device type")
    user = request.user
    mine = None
    if user.is_authenticated and user.pk in page["mine"]:
        rank, submission_id = page["mine"][user.pk]
        mine = {"rank": rank, "submission_id": submission_id}
    return render(request, "web/task_detail.html", {"page": page, "body": page["html"], "mine": mine})
