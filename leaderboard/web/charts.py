"""The task page's figures, built with plotly's Python API and sent as fig.to_json().

The browser renders them with the vendored plotly.js (static/js/charts.js). Every number shown
here is also in the page's tables, so the page reads the same without JavaScript.

Titles are the page's own headings above each chart, not plotly's: plotly's mode bar sits at the
top right of the figure and covered a title there on a narrow screen. The top margin leaves the
mode bar a strip of its own.
"""
from __future__ import annotations

import math
from datetime import timedelta

import plotly.graph_objects as go
from django.utils import timezone

from evaluator import significant  # plain decimals down to 1e-7: tick labels never take an exponent
from leaderboard.web.present import shape_label

TOP_N = 20
# above this ratio of the largest to the smallest value a linear axis flattens the small ones
# (a CPU's 0.001x next to the 1x line, a floor of microseconds under bars of hundreds of ms)
LOG_SPREAD = 10
# the history's time axis spans at least this, so a point uploaded a minute ago reads in minutes
HISTORY_MIN_SPAN = timedelta(hours=1)
# hovers print three significant digits, as the pages do (leaderboard/templatetags/numbers.py)
SPEEDUP = "%{y:.3g}x"
MS = "%{y:.3g} ms"
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


# a scatter chart's value axis reaches this share of its span beyond its least and largest value,
# so that a point is never drawn on the edge of the plot, half cut, beyond the last tick label
POINT_PAD = 0.1


def _value_axis(fig, values, suffix: str = "", points: bool = False) -> None:
    """The y axis, log or linear by axis_type, labelled the same way on every chart: in plain
    decimals ("0.001", "0.01", "10"), never "1e-3" or an SI prefix, which reads as a unit. A log
    axis is labelled here, not by plotly, whose labels between the powers of ten are a bare "2"
    and "5" that read as values of their own ("2" as 2x): over two decades or more at the powers
    of ten alone, from the one below the least value to the one above the largest, with a grid line
    at each 2 to 9 between; over less at 1, 2 and 5 times each power of ten.
    `points` (charts of dots, not bars): the range is set with POINT_PAD to spare on either side
    (plotly's own range ended on a lone point, which sat on the plot's edge), also where all the
    values are one."""
    kind = axis_type(values)
    fig.update_yaxes(type=kind, tickformat=",~g", ticksuffix=suffix)
    if kind != "log":
        shown = [v for v in values if v is not None]
        if points and shown:
            low, high = min(shown), max(shown)
            pad = POINT_PAD * ((high - low) or abs(high) or 1)
            fig.update_yaxes(range=[low - pad, high + pad])
        return
    shown = [v for v in values if v is not None and v > 0]
    low, high = math.log10(min(shown)), math.log10(max(shown))
    steps = (1, 2, 5)
    if high - low >= 2:
        steps = (1,)
        fig.update_yaxes(range=[math.floor(low) - 0.05, math.ceil(high) + 0.05],
                         minor=dict(dtick="D1", showgrid=True))
    elif points:
        pad = POINT_PAD * (high - low)
        fig.update_yaxes(range=[low - pad, high + pad])
    ticks = [m * 10 ** e for e in range(math.floor(low), math.ceil(high) + 1) for m in steps]
    fig.update_yaxes(tickvals=ticks, ticktext=[significant(t, 1) + suffix for t in ticks])


def top_speedups(entries: list) -> str:
    """Per user, a dot at each of the best entries' speedups over torch.compile and over eager, on
    a stem from the 1x line. Not bars: a bar on a log axis rises from the axis' bottom, whatever
    value that is, so its length says nothing."""
    top = entries[:TOP_N]
    users = [e.user.get_username() for e in top]
    fig = go.Figure(
        [
            _lollipop("over torch.compile", users, [e.speedup_vs_compile for e in top]),
            _lollipop("over eager", users, [e.speedup_vs_eager for e in top]),
        ]
    )
    # the 1x line counts: a board far below it is drawn on a log axis that shows both
    speedups = [1] + [e.speedup_vs_compile for e in top] + [e.speedup_vs_eager for e in top]
    fig.update_layout(
        scattermode="group", shapes=[_ONE], yaxis_title="speedup (x)", xaxis_title="user", **_LAYOUT
    )
    _value_axis(fig, speedups, suffix="x", points=True)
    return fig.to_json()


def _lollipop(name: str, users: list[str], ys: list) -> go.Scatter:
    # the stem is the dot's error bar reaching to 1: in data units, so it ends on the 1x line on
    # a log axis as on a linear one
    up = [1 - y if y is not None and y < 1 else 0 for y in ys]
    down = [y - 1 if y is not None and y > 1 else 0 for y in ys]
    return go.Scatter(
        name=name, x=users, y=ys, mode="markers", marker=dict(size=10),
        error_y=dict(type="data", symmetric=False, array=up, arrayminus=down, width=0, thickness=2),
        hovertemplate="%{x}<br>" + SPEEDUP + " " + name + "<extra></extra>",
    )


def history(points: list[dict], now=None) -> str:
    """Each verified ranked submission's speedup over torch.compile against its upload date, plus
    the best so far. `points` are selectors.submission_history_for_task rows, oldest first; `now`
    (default: the time of the call) is where the best so far ends."""
    now = now or timezone.now()
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
        go.Scatter(
            name="submission", x=xs, y=ys, mode="markers", text=names,
            hovertemplate="%{text}<br>%{x|%Y-%m-%d %H:%M}<br>" + SPEEDUP + "<extra></extra>",
        )
    )
    if best_x:
        # a step at each new best, held until now, and a ring around each new best's dot: a point
        # uploaded a moment ago has a line of no length, but its ring shows
        fig.add_trace(go.Scatter(
            name="best so far", x=best_x + [now.isoformat()], y=best_y + [best], mode="lines+markers",
            line_shape="hv",
            marker=dict(symbol="circle-open", size=[12] * len(best_x) + [0], line=dict(width=2)),
            hovertemplate="best so far<br>" + SPEEDUP + "<extra></extra>",
        ))
    fig.update_layout(shapes=[_ONE], yaxis_title="speedup (x)", xaxis_title="date", **_LAYOUT)
    _value_axis(fig, [1] + ys, suffix="x", points=True)
    fig.update_xaxes(type="date", range=_date_range([p["created_at"] for p in points], now))
    return fig.to_json()


def _date_range(moments: list, now) -> list[str]:
    """From the first moment to now, at least HISTORY_MIN_SPAN (reaching further back where the
    moments span less), with a twentieth of the span to spare on either side. A lone moment (one
    upload, or several at once) sits in the middle of an axis of HISTORY_MIN_SPAN, or further left
    where now is later: with the axis ending at now, a point uploaded a moment ago sat on the
    right edge, past the last tick label."""
    last = max([now, *moments])
    first = min([*moments, last - HISTORY_MIN_SPAN])
    if len(set(moments)) == 1:
        (only,) = set(moments)
        first, last = only - HISTORY_MIN_SPAN / 2, max(last, only + HISTORY_MIN_SPAN / 2)
    pad = (last - first) / 20
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
        fig.add_trace(go.Bar(
            name=f"time {label}", x=users, y=times, hovertemplate="%{x}<br>" + MS + f"<extra>{label}</extra>",
        ))
        fig.add_trace(
            go.Scatter(
                name=f"floor {label}", x=users, y=[floor["floor_ms"]] * len(users),
                # a line alone has no length under a single user's bar: each user gets a tick too
                mode="lines+markers", line=dict(dash="dash"),
                marker=dict(symbol="line-ew-open", size=30, line=dict(width=3)),
                hovertemplate="%{x}<br>floor " + MS + "<extra></extra>",
            )
        )
    fig.update_layout(barmode="group", yaxis_title="ms", xaxis_title="user", **_LAYOUT)
    _value_axis(fig, values)
    return fig.to_json()


def _candidate_ms(entry, shape: dict):
    report = entry.typed_report
    for row in report.shapes if report else ():
        if row.shape == shape:
            return row.candidate_ms
    return None


# the candidate's side is named by the page: "your kernel" to its owner, "this kernel" to anyone else
SIDES = (("eager", "eager PyTorch"), ("compile", "torch.compile"))
# the floor's line over a shape's bars: dark against all three bars' colours
FLOOR_COLOR = "#111"


def result_times(rows: list[dict], *, kernel: str = "this kernel") -> str:
    """One result's median time per benchmark shape for the kernel (its legend `kernel`; the words
    that fit whoever reads it, so none that assume the owner unless told), eager and
    torch.compile, each with its p10-p90 band as an error bar, and the shape's roofline floor.
    `rows` are selectors.shape_rows rows with `shape` already a label."""
    labels = [r["shape"] for r in rows]
    fig = go.Figure()
    values = []
    for side, name in (("candidate", kernel), *SIDES):
        ys = [r.get(f"{side}_ms") for r in rows]
        # the bands count for the axis too, so that a p90 stays inside it
        values += ys + [r.get(f"{side}_p10_ms") for r in rows] + [r.get(f"{side}_p90_ms") for r in rows]
        lo = [(r.get(f"{side}_ms") or 0) - r[f"{side}_p10_ms"] if r.get(f"{side}_p10_ms") is not None else 0
              for r in rows]
        hi = [r[f"{side}_p90_ms"] - (r.get(f"{side}_ms") or 0) if r.get(f"{side}_p90_ms") is not None else 0
              for r in rows]
        fig.add_trace(go.Bar(
            name=name, x=labels, y=ys,
            error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo, visible=any(hi) or any(lo)),
            hovertemplate="%{x}<br>" + MS + "<extra>" + name + "</extra>",
        ))
    floors = [r.get("floor_ms") for r in rows]
    values += [f for f in floors if f]
    fig.add_trace(go.Scatter(
        name="roofline floor", x=labels, y=floors, mode="markers",
        marker=dict(symbol="line-ew-open", size=16, color=FLOOR_COLOR, line=dict(width=3)),
        hovertemplate="%{x}<br>floor " + MS + "<extra></extra>",
    ))
    # the trace's marker is as wide as a fixed number of pixels; the line across all three bars
    # of a shape is a shape of the layout, placed in units of the axis (a category is 1 wide,
    # its group of bars 0.8)
    lines = [dict(type="line", xref="x", yref="y", x0=i - 0.4, x1=i + 0.4, y0=f, y1=f, layer="above",
                  line=dict(color=FLOOR_COLOR, width=3)) for i, f in enumerate(floors) if f]
    fig.update_layout(
        barmode="group", yaxis_title="ms (median; bar: p10-p90)", xaxis_title="benchmark shape",
        shapes=lines, **_LAYOUT,
    )
    _value_axis(fig, values)
    return fig.to_json()
