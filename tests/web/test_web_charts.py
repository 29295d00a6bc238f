"""The figures of leaderboard/web/charts.py, read from their JSON: marks that mean something on a
log axis, tick labels a reader takes for what they are, a best-so-far line that is drawn, a floor
that shows over the bars, and hovers with the pages' three significant digits."""
from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

from evaluator import Report
from leaderboard.web import charts

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=timezone.utc)
SHAPE = {"M": 256, "N": 1024}


def entry(name, speedup, eager, ms=100.0):
    return SimpleNamespace(user=SimpleNamespace(get_username=lambda: name), speedup_vs_compile=speedup,
                           speedup_vs_eager=eager,
                           typed_report=Report.from_stored({"task": "softmax", "mode": "ranked", "device": "cpu",
                                                            "shapes": [{"shape": SHAPE, "candidate_ms": ms}]}))


def point(minutes_ago, speedup, name="u"):
    return {"created_at": NOW - timedelta(minutes=minutes_ago), "speedup_vs_compile": speedup,
            "user__username": name}


def result_row(ms, eager, compile_, floor, shape="M=256, N=1024"):
    row = {"shape": shape, "floor_ms": floor}
    for side, value in (("candidate", ms), ("eager", eager), ("compile", compile_)):
        row.update({f"{side}_ms": value, f"{side}_p10_ms": value * 0.95, f"{side}_p90_ms": value * 1.05})
    return row


CPU = [entry("slow", 0.00296, 0.0021, ms=357), entry("slower", 0.0021, 0.0016, ms=480)]
GPU = [entry(f"user{i}", s, s * 1.7, ms=ms) for i, (s, ms) in enumerate([(1.15, 0.11), (1.08, 0.18), (0.97, 0.6)])]
CPU_FLOORS = [{"shape": SHAPE, "floor_ms": 0.0021}]


def figures():
    """Every chart of the site, on the CPU's spread of values and on a GPU's."""
    return {
        "top cpu": json.loads(charts.top_speedups(CPU)),
        "top gpu": json.loads(charts.top_speedups(GPU)),
        "history cpu": json.loads(charts.history([point(3, 0.00296)], now=NOW)),
        "history gpu": json.loads(charts.history([point(60 * 24 * (3 - i), s) for i, s in
                                                  enumerate([0.97, 1.08, 1.15])], now=NOW)),
        "floor cpu": json.loads(charts.versus_floor(CPU, CPU_FLOORS)),
        "result cpu": json.loads(charts.result_times([result_row(357, 0.32, 0.48, 0.0021)])),
        "result gpu": json.loads(charts.result_times([result_row(0.15, 0.26, 0.17, 0.09),
                                                      result_row(0.9, 1.5, 1.0, 0.54, "M=8192, N=8192")])),
    }


def test_top_speedups_are_dots_on_stems_from_the_1x_line_not_bars_from_the_axis_bottom():
    for fig in (json.loads(charts.top_speedups(CPU)), json.loads(charts.top_speedups(GPU))):
        assert [t["name"] for t in fig["data"]] == ["over torch.compile", "over eager"]
        for trace in fig["data"]:
            assert trace["type"] == "scatter" and trace["mode"] == "markers"
            stem = trace["error_y"]
            for y, up, down in zip(trace["y"], stem["array"], stem["arrayminus"]):
                # each stem runs from the dot to 1, above or below it
                assert (y + up if y < 1 else y - down) == 1
    cpu = json.loads(charts.top_speedups(CPU))
    assert cpu["layout"]["yaxis"]["type"] == "log"
    assert cpu["data"][0]["y"] == [0.00296, 0.0021]


def test_a_log_axis_is_labelled_at_powers_of_ten_in_plain_decimals():
    top = json.loads(charts.top_speedups(CPU))["layout"]["yaxis"]
    assert top["ticktext"] == ["0.001x", "0.01x", "0.1x", "1x"]
    assert top["tickvals"] == [0.001, 0.01, 0.1, 1]
    # the range reaches the labelled power of ten below the least dot
    assert top["range"][0] <= math.log10(0.001) < math.log10(0.0016)
    floor = json.loads(charts.versus_floor(CPU, CPU_FLOORS))["layout"]["yaxis"]
    assert floor["ticktext"] == ["0.001", "0.01", "0.1", "1", "10", "100", "1,000"]
    result = json.loads(charts.result_times([result_row(357, 0.32, 0.48, 0.0021)]))["layout"]["yaxis"]
    assert result["ticktext"] == floor["ticktext"]


def test_a_log_axis_under_two_decades_is_labelled_at_1_2_and_5_written_out():
    axis = json.loads(charts.top_speedups([entry("a", 0.08, 0.3), entry("b", 0.3, 0.5)]))["layout"]["yaxis"]
    assert axis["type"] == "log"
    assert axis["ticktext"] == ["0.01x", "0.02x", "0.05x", "0.1x", "0.2x", "0.5x", "1x", "2x", "5x"]


def test_every_axis_of_every_chart_reads_the_same_way():
    for name, fig in figures().items():
        axis = fig["layout"]["yaxis"]
        # no "1e-3" next to "0.01", no SI "100μ" next to "ms", no bare "2" or "5" between decades
        assert axis.get("exponentformat") is None, name
        assert axis["tickformat"] == ",~g", name
        for text in axis.get("ticktext", []):
            assert re.fullmatch(r"([125]0*(,000)*|0\.0*[125])x?", text), (name, text)
        assert axis.get("ticksuffix", "") == ("x" if "speedup" in axis["title"]["text"] else ""), name


def test_every_hover_writes_three_significant_digits_as_the_pages_do():
    for name, fig in figures().items():
        for trace in fig["data"]:
            template = trace["hovertemplate"]
            numbers = re.findall(r"%\{y(:[^}]*)?\}", template)
            assert numbers == [":.3g"], (name, trace["name"], template)


def test_a_lone_point_has_its_best_so_far_drawn_to_now_on_an_axis_of_an_hour():
    fig = json.loads(charts.history([point(3, 0.00296)], now=NOW))
    best = fig["data"][1]
    assert best["name"] == "best so far" and best["mode"] == "lines+markers"
    # two ends: a line of some length, from the upload to now; a ring at the upload only
    assert best["y"] == [0.00296, 0.00296] and best["marker"]["size"] == [12, 0]
    assert [datetime.fromisoformat(x) for x in best["x"]] == [NOW - timedelta(minutes=3), NOW]
    first, last = (datetime.fromisoformat(x) for x in fig["layout"]["xaxis"]["range"])
    assert last - first <= charts.HISTORY_MIN_SPAN * 1.1
    assert first < NOW - timedelta(minutes=3) and NOW < last


def test_a_lone_point_sits_inside_both_axes_not_on_an_edge():
    """One upload: in the middle of the time axis (an axis ending at now put it on the right edge,
    past the last tick label) and inside the speedup axis, with room above and below it."""
    upload = NOW - timedelta(minutes=3)
    fig = json.loads(charts.history([point(3, 1.3)], now=NOW))
    first, last = (datetime.fromisoformat(x) for x in fig["layout"]["xaxis"]["range"])
    assert abs((upload - first) - (last - upload)) < timedelta(seconds=1)  # centred
    assert last - upload >= charts.HISTORY_MIN_SPAN / 2
    low, high = fig["layout"]["yaxis"]["range"]
    assert low < 1 < 1.3 < high and high - 1.3 >= 0.1 * (1.3 - 1) * 0.99
    # an old lone upload: the axis still reaches now, the point well inside on the left
    old = json.loads(charts.history([point(60 * 24, 1.3)], now=NOW))
    first, last = (datetime.fromisoformat(x) for x in old["layout"]["xaxis"]["range"])
    assert first < NOW - timedelta(days=1) - timedelta(minutes=29) and last > NOW
    # the top speedups of a single user: neither dot on the axis' end
    low, high = json.loads(charts.top_speedups([entry("ann", 1.3, 2.1)]))["layout"]["yaxis"]["range"]
    assert low < 1 and high > 2.1
    # a log axis of less than two decades is padded too
    low, high = json.loads(charts.history([point(3, 0.05)], now=NOW))["layout"]["yaxis"]["range"]
    assert low < math.log10(0.05) and high > 0


def test_the_history_spans_from_its_first_point_to_now_and_the_best_steps_up():
    points = [point(60 * 24 * 3, 0.97), point(60 * 24 * 2, 1.15), point(60 * 24, 1.08)]
    fig = json.loads(charts.history(points, now=NOW))
    best = fig["data"][1]
    assert best["y"] == [0.97, 1.15, 1.15] and best["line"]["shape"] == "hv"
    first, last = (datetime.fromisoformat(x) for x in fig["layout"]["xaxis"]["range"])
    assert NOW - timedelta(days=3, hours=6) < first < NOW - timedelta(days=3)
    assert NOW < last < NOW + timedelta(hours=6)


def test_a_history_without_a_speedup_lists_no_best_so_far():
    fig = json.loads(charts.history([point(3, None)], now=NOW))
    assert [t["name"] for t in fig["data"]] == ["submission"]


def test_the_result_floor_is_a_dark_line_across_the_shapes_three_bars():
    rows = [result_row(0.15, 0.26, 0.17, 0.09), result_row(0.9, 1.5, 1.0, 0.54, "M=8192, N=8192")]
    fig = json.loads(charts.result_times(rows))
    lines = fig["layout"]["shapes"]
    assert [(s["x0"], s["x1"], s["y0"], s["y1"]) for s in lines] == [(-0.4, 0.4, 0.09, 0.09), (0.6, 1.4, 0.54, 0.54)]
    assert all(s["xref"] == "x" and s["layer"] == "above" and s["line"]["color"] == charts.FLOOR_COLOR
               for s in lines)
    # a group of bars is 0.8 of a category: the line spans all three
    assert fig["layout"].get("bargap") in (None, 0.2)
    floor = fig["data"][3]
    assert floor["name"] == "roofline floor" and floor["marker"]["color"] == charts.FLOOR_COLOR
