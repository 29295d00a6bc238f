"""The task page's figures, built with plotly's Python API and sent as fig.to_json().

The browser renders them with the vendored plotly.js (static/js/charts.js). Every number shown
here is also in the page's tables, so the page reads the same without JavaScript.

Titles are the page's own headings above each chart, not plotly's: plotly's mode bar sits at the
top right of the figure and covered a title there on a narrow screen. The top margin leaves the
mode bar a strip of its own.
"""
from __future__ import annotations

from datetime import timedelta

import plotly.graph_objects as go

from leaderboard.web.present import shape_label

TOP_N = 20
# above this ratio of the largest to the smallest value a linear axis flattens the small ones
# (a CPU's 0.001x next to the 1x line, a floor of microseconds under bars of hundreds of ms)
LOG_SPREAD = 10
# a history shorter than this is widened to it, so its axis reads in dates, not in milliseconds
HISTORY_MIN_SPAN = timedelta(days=2)
# a dotted line at speedup 1 (as fast as the baseline); a layout shape, cheaper than add_hline
_ONE = dict(type="line", xref="paper", x0=0, x1=1, y0=1, y1=1, line=dict(dash="dot", color="#888"))
_LAYOUT = dict(
    template="plotly_white",
    margin=dict(l=60, r=20, t=36, b=60),
    height=380,
    legend=dict(orientation="h", y=-0.2),
)


def axis_type(values) -> str:
    """"log" when the positive values span more than LOG_SPREAD, else "linear"."""
    shown = [v for v in values if v is not None and v > 0]
    return "log" if shown and max(shown) / min(shown) > LOG_SPREAD else "linear"


def top_speedups(entries: list) -> str:
    """Grouped bars: the best entries' speedup over torch.compile and over eager."""
    top = entries[:TOP_N]
    users = [e.user.get_username() for e in top]
    fig = go.Figure(
        [
            go.Bar(name="over torch.compile", x=users, y=[e.speedup_vs_compile for e in top]),
            go.Bar(name="over eager", x=users, y=[e.speedup_vs_eager for e in top]),
        ]
    )
    # the 1x line counts: a board far below it is drawn on a log axis that shows both
    speedups = [1] + [e.speedup_vs_compile for e in top] + [e.speedup_vs_eager for e in top]
    fig.update_layout(
        barmode="group", shapes=[_ONE], yaxis_title="speedup (x)", xaxis_title="user",
        yaxis_type=axis_type(speedups), **_LAYOUT
    )
    return fig.to_json()


def history(points: list[dict]) -> str:
    """Each verified ranked submission's speedup over torch.compile against its upload date, plus
    the best so far. `points` are selectors.submission_history_for_task rows, oldest first."""
    xs = [p["created_at"].isoformat() for p in points]
    ys = [p["speedup_vs_compile"] for p in points]
    names = [p["user__username"] for p in points]
    best_x, best_y, best = [], [], None
    for x, y in sorted(zip(xs, ys), key=lambda xy: xy[0]):
        if y is not None and (best is None or y > best):
            best = y
            best_x.append(x)
            best_y.append(y)
    fig = go.Figure(
        [
            go.Scatter(
                name="submission", x=xs, y=ys, mode="markers", text=names,
                hovertemplate="%{text}<br>%{x}<br>%{y:.3f}x<extra></extra>",
            ),
            go.Scatter(name="best so far", x=best_x, y=best_y, mode="lines", line_shape="hv"),
        ]
    )
    fig.update_layout(
        shapes=[_ONE], yaxis_title="speedup (x)", xaxis_title="date",
        yaxis_type=axis_type([1] + ys), **_LAYOUT
    )
    fig.update_xaxes(type="date", range=_date_range([p["created_at"] for p in points]))
    return fig.to_json()


def _date_range(moments: list):
    """A range at least HISTORY_MIN_SPAN wide around the moments, or None (plotly's own) when
    they already span that much. One point alone otherwise gets an axis of a millisecond."""
    if not moments:
        return None
    first, last = min(moments), max(moments)
    pad = (HISTORY_MIN_SPAN - (last - first)) / 2
    if pad <= timedelta(0):
        return None
    return [(first - pad).isoformat(), (last + pad).isoformat()]


def versus_floor(entries: list, floors: list[dict]) -> str:
    """Each top entry's measured time per benchmark shape, with that shape's roofline floor."""
    top = entries[:TOP_N]
    users = [e.user.get_username() for e in top]
    fig = go.Figure()
    labels = [shape_label(f["shape"]) for f in floors]
    values = []
    for floor, label in zip(floors, labels):
        times = []
        for e in top:
            times.append(_candidate_ms(e, floor["shape"]))
        values += times + [floor["floor_ms"]]
        fig.add_trace(go.Bar(name=f"time {label}", x=users, y=times))
        fig.add_trace(
            go.Scatter(
                name=f"floor {label}", x=users, y=[floor["floor_ms"]] * len(users),
                # a line alone has no length under a single user's bar: each user gets a tick too
                mode="lines+markers", line=dict(dash="dash"),
                marker=dict(symbol="line-ew-open", size=30, line=dict(width=3)),
                hovertemplate="%{x}<br>floor %{y:.3g} ms<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        yaxis_title="ms",
        yaxis_type=axis_type(values),
        xaxis_title="user",
        **_LAYOUT,
    )
    fig.update_yaxes(exponentformat="e")
    return fig.to_json()


def _candidate_ms(entry, shape: dict):
    for row in (entry.report or {}).get("shapes") or []:
        if row.get("shape") == shape:
            return row.get("candidate_ms")
    return None


SIDES = (("candidate", "your kernel"), ("eager", "eager PyTorch"), ("compile", "torch.compile"))


def result_times(rows: list[dict]) -> str:
    """One result's median time per benchmark shape for the kernel, eager and torch.compile, each
    with its p10-p90 band as an error bar, and the shape's roofline floor. `rows` are
    selectors.shape_rows rows with `shape` already a label."""
    labels = [r["shape"] for r in rows]
    fig = go.Figure()
    values = []
    for side, name in SIDES:
        ys = [r.get(f"{side}_ms") for r in rows]
        values += [y for y in ys if y]
        lo = [(r.get(f"{side}_ms") or 0) - r[f"{side}_p10_ms"] if r.get(f"{side}_p10_ms") is not None else 0
              for r in rows]
        hi = [r[f"{side}_p90_ms"] - (r.get(f"{side}_ms") or 0) if r.get(f"{side}_p90_ms") is not None else 0
              for r in rows]
        fig.add_trace(go.Bar(
            name=name, x=labels, y=ys,
            error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo, visible=any(hi) or any(lo)),
            hovertemplate="%{x}<br>%{y:.3g} ms<extra>" + name + "</extra>",
        ))
    floors = [r.get("floor_ms") for r in rows]
    values += [f for f in floors if f]
    fig.add_trace(go.Scatter(
        name="roofline floor", x=labels, y=floors, mode="markers",
        marker=dict(symbol="line-ew-open", size=40, line=dict(width=3, color="#b3261e")),
        hovertemplate="%{x}<br>floor %{y:.3g} ms<extra></extra>",
    ))
    fig.update_layout(
        barmode="group", yaxis_title="ms (median; bar: p10-p90)", xaxis_title="benchmark shape",
        yaxis_type=axis_type(values), **_LAYOUT,
    )
    # "1e-4", not plotly's SI "100μ", which reads as a unit next to "ms"
    fig.update_yaxes(exponentformat="e")
    return fig.to_json()
