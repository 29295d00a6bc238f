from django.http import Http404
from django.shortcuts import get_object_or_404, render

from leaderboard import selectors
from leaderboard.models import Task
from leaderboard.web import charts
from leaderboard.web.pagecache import cached, data_fingerprint
from leaderboard.web.present import device_label, highlight_python, json_script_raw, shape_label

# the table shows this many entries; the charts the top charts.TOP_N
LEADERBOARD_ROWS = 100
# the "over time" chart shows at most this many of the newest verified submissions
HISTORY_POINTS = 500


def _device_types(task: Task) -> list[str]:
    """Device types that have a leaderboard for this task, GPUs first."""
    found = set(selectors.device_types_for_task(task=task))
    return sorted(found, key=lambda d: (d == "cpu", d))


def _leaderboard(task: Task, device_type: str) -> dict:
    board = selectors.leaderboard_for_task(task=task, device_type=device_type)
    entries = board[:LEADERBOARD_ROWS]
    history = selectors.submission_history_for_task(task=task, device_type=device_type, limit=HISTORY_POINTS)
    floors = task.floors_for(device_type)
    rows = [
        {
            "rank": i,
            "submission_id": e.pk,
            "user_id": e.user_id,
            "username": e.user.get_username(),
            "speedup_vs_compile": e.speedup_vs_compile,
            "speedup_vs_eager": e.speedup_vs_eager,
            "pct_of_floor": e.pct_of_floor,
            "gpu_name": e.gpu_name or device_label(e.device_type),
            "date": e.finished_at,
        }
        for i, e in enumerate(entries, start=1)
    ]
    built = []
    if entries:
        built.append(("chart-top", "Top speedups", charts.top_speedups(entries)))
        built.append(("chart-history", "Speedups over time", charts.history(history)))
        if floors:
            built.append(("chart-floor", "Time against the roofline floor", charts.versus_floor(entries, floors)))
    figures = [(i, title, json_script_raw(fig, f"{i}-data")) for i, title, fig in built]
    return {"rows": rows, "figures": figures, "total": len(board)}


def task_detail(request, name):
    task = get_object_or_404(Task, name=name)
    fingerprint = data_fingerprint()
    device_types = cached(f"devices:{task.pk}", lambda: _device_types(task), fingerprint=fingerprint)
    device_type = request.GET.get("device") or (device_types[0] if device_types else "cpu")
    if device_types and device_type not in device_types:
        raise Http404("No leaderboard for this device type")
    board = cached(f"task:{task.pk}:{device_type}", lambda: _leaderboard(task, device_type), fingerprint=fingerprint)
    kind = device_type.split(":", 1)[0]
    context = {
        "task": task,
        "device_type": device_type,
        "device_name": device_label(device_type),
        "devices": [{"type": d, "label": device_label(d)} for d in device_types],
        "reference_html": highlight_python(task.reference_source) if task.reference_source else "",
        "test_shapes": [shape_label(s) for s in task.test_shapes],
        "bench_shapes": [shape_label(s) for s in (task.bench_shapes or {}).get(kind, [])],
        "floors": [{"shape": shape_label(f["shape"]), "floor_ms": f["floor_ms"]} for f in task.floors_for(device_type)],
        "tolerance": [(k, f"{v:g}") for k, v in (task.tolerance or {}).items()],
        **board,
    }
    return render(request, "web/task_detail.html", context)
