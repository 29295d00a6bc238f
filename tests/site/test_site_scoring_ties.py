"""leaderboard/scoring.py's tie rule (vs_compile, calibration_band, speedup_rel_se): pure functions,
no database. Each edge named in the rule's docstring has a case here that fails if it moves."""
import math

import pytest

from leaderboard import scoring


def row(speedup=1.0, rel_se=None):
    r = {"shape": {"N": 1}, "speedup_vs_compile": speedup}
    if rel_se is not None:
        r["speedup_vs_compile_rel_se"] = rel_se
    return r


def word(speedup, shapes=(), band=0.03):
    return scoring.vs_compile(speedup=speedup, shapes=list(shapes), band=band)["vs_compile"]


def test_a_speedup_inside_the_band_is_a_tie_and_outside_it_is_not():
    assert word(1.004) == "tie"
    assert word(0.99) == "tie"
    assert word(1.05) == "faster"
    assert word(0.95) == "slower"


@pytest.mark.parametrize("band", [0.03, 0.15, 0.01, 0.007])
def test_exactly_at_the_band_is_a_tie_just_past_it_is_not(band):
    # 1 + band in floating point may land a rounding off the band: the ends are included anyway
    assert word(1.0 + band, band=band) == "tie"
    assert word(1.0 - band, band=band) == "tie"
    assert word(1.0 + band + 1e-6, band=band) == "faster"
    assert word(1.0 - band - 1e-6, band=band) == "slower"


def test_the_interval_is_the_speedup_plus_minus_band_and_the_spread():
    found = scoring.vs_compile(speedup=1.10, shapes=[row(1.10, rel_se=0.01)], band=0.03)
    half = 0.03 + scoring.TIE_SPREAD_Z * 1.10 * 0.01
    assert found["half_width"] == pytest.approx(half)
    assert found["low"] == pytest.approx(1.10 - half) and found["high"] == pytest.approx(1.10 + half)
    assert found["rel_se"] == pytest.approx(0.01)
    assert found["vs_compile"] == "faster"


def test_the_runs_own_spread_turns_a_win_by_the_band_into_a_tie():
    assert word(1.04, [row(1.04)]) == "faster"  # band alone: 1.01 to 1.07
    assert word(1.04, [row(1.04, rel_se=0.01)]) == "tie"  # ± (0.03 + 2 * 1.04 * 0.01): 0.989 to 1.091
    assert word(0.96, [row(0.96, rel_se=0.01)]) == "tie"


def test_missing_spread_in_an_old_report_falls_back_to_the_band_alone():
    old = [{"shape": {"N": 1}, "candidate_ms": 1.0, "speedup_vs_compile": 1.04}]  # no spread keys
    found = scoring.vs_compile(speedup=1.04, shapes=old, band=0.03)
    assert found["rel_se"] is None and found["half_width"] == pytest.approx(0.03)
    assert found["vs_compile"] == "faster"
    # a spread of null (one round) counts as missing too, and so does a report without shapes
    assert scoring.vs_compile(speedup=1.04, shapes=[row(1.04, rel_se=None)], band=0.03)["rel_se"] is None
    assert scoring.vs_compile(speedup=1.04, shapes=None, band=0.03)["half_width"] == pytest.approx(0.03)


def test_one_shape_without_a_spread_leaves_the_band_alone_for_the_whole_result():
    shapes = [row(1.04, rel_se=0.05), {"shape": {"N": 2}, "speedup_vs_compile": 1.04}]
    assert scoring.speedup_rel_se(shapes) is None
    assert word(1.04, shapes) == "faster"


def test_several_shapes_combine_as_their_geometric_mean_does():
    # the log of a geometric mean of n shapes is the mean of their logs: error sqrt(sum se^2) / n
    two = [row(1.05, rel_se=0.01), row(1.03, rel_se=0.02)]
    assert scoring.speedup_rel_se(two) == pytest.approx(math.sqrt(0.01 ** 2 + 0.02 ** 2) / 2)
    four = [row(1.04, rel_se=0.01)] * 4
    assert scoring.speedup_rel_se(four) == pytest.approx(0.005)  # more shapes, a surer mean
    g = scoring.geomean([1.05, 1.03])
    found = scoring.vs_compile(speedup=g, shapes=two, band=0.03)
    assert found["half_width"] == pytest.approx(0.03 + 2 * g * math.sqrt(0.01 ** 2 + 0.02 ** 2) / 2)
    # one shape with a spread of 0.01 makes a 1.045 a tie (± 0.051); four such shapes a win (± 0.040)
    assert word(1.045, [row(1.045, rel_se=0.01)]) == "tie"
    assert word(1.045, [row(1.045, rel_se=0.01)] * 4) == "faster"


def test_a_result_without_a_speedup_has_no_word():
    for speedup in (None, 0.0, -1.0, math.nan, math.inf):
        assert scoring.vs_compile(speedup=speedup, shapes=[], band=0.03) is None
    assert scoring.tie_fields(speedup=None, shapes=[], device_type="cpu", calibration=None) == {
        "vs_compile": "", "vs_compile_low": None, "vs_compile_high": None, "board_speedup": None}


def test_a_tie_ranks_at_one_and_the_others_at_their_speedup():
    assert scoring.board_speedup(1.02, "tie") == 1.0
    assert scoring.board_speedup(0.98, "tie") == 1.0
    assert scoring.board_speedup(1.2, "faster") == 1.2
    assert scoring.board_speedup(0.8, "slower") == 0.8
    fields = scoring.tie_fields(speedup=1.02, shapes=[], device_type="cuda:NVIDIA H200", calibration=None)
    assert fields["vs_compile"] == "tie" and fields["board_speedup"] == 1.0
    assert fields["vs_compile_low"] == pytest.approx(0.99) and fields["vs_compile_high"] == pytest.approx(1.05)


def test_the_band_is_the_calibrated_reading_where_calibrated_else_the_devices_bound():
    calibrated = {"compile_vs_compile": 1.012, "reference_vs_eager": 0.99, "ok": True}
    assert scoring.calibration_band(device_type="cuda:NVIDIA H200", calibration=calibrated) == {
        "band": pytest.approx(0.012), "source": "calibration"}
    assert scoring.calibration_band(device_type="cuda:NVIDIA H200",
                                    calibration={**calibrated, "compile_vs_compile": 0.985})["band"] == pytest.approx(0.015)
    # not within bounds, failed, or never measured: the kind's bound
    for entry in ({**calibrated, "ok": False, "compile_vs_compile": 1.2},
                  {"compile_vs_compile": None, "reference_vs_eager": None, "ok": False, "errors": ["x"]}, None, {}):
        assert scoring.calibration_band(device_type="cuda:NVIDIA H200", calibration=entry) == {
            "band": scoring.CALIBRATION_TOLERANCE["cuda"], "source": "tolerance"}
        assert scoring.calibration_band(device_type="cpu", calibration=entry)["band"] == scoring.CALIBRATION_TOLERANCE["cpu"]
    # a calibrated device's narrower band makes a win of what the bound would call a tie
    band = scoring.calibration_band(device_type="cuda:NVIDIA H200", calibration=calibrated)["band"]
    assert word(1.02, band=band) == "faster" and word(1.02, band=0.03) == "tie"
