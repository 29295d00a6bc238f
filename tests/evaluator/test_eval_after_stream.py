"""The scored GPU time: to an event on the call's own stream; plus, when it clearly exceeds what
the trusted baselines show, whatever the device did after that stream finished
(judge._after_stream_excess)."""
import pytest
import torch

from evaluator import judge, timing
from evaluator.checks import Failure
from evaluator.tasks import TASKS


def test_stream_time_is_the_full_time_when_the_runner_sends_none():
    assert judge._stream_ms({"ms": 1.5}, 1.5) == 1.5


def test_stream_time_never_exceeds_the_full_time():
    assert judge._stream_ms({"stream_ms": 1.2}, 1.5) == 1.2
    assert judge._stream_ms({"stream_ms": 9.0}, 1.5) == 1.5


@pytest.mark.parametrize("bad", ["0.1", -0.1, float("nan"), float("inf"), True, None])
def test_a_malformed_stream_time_is_a_protocol_failure(bad):
    with pytest.raises(Failure) as e:
        judge._stream_ms({"stream_ms": bad}, 1.5)
    assert e.value.problems[0][0] == "protocol"


def test_honest_gaps_cost_nothing_and_left_over_work_is_charged():
    base = [0.030, 0.028, 0.035, 0.031, 0.029, 0.040]
    assert judge._after_stream_excess([0.029, 0.030, 0.027, 0.033], base) == 0.0
    # a side stream still busy 0.1 ms after the call's stream finished
    assert judge._after_stream_excess([0.131, 0.128, 0.135, 0.129], base) == pytest.approx(0.1, abs=0.002)
    assert judge._after_stream_excess([], base) == 0.0


@pytest.fixture
def bare_judge(monkeypatch):
    """An evaluation object with only what _shape_row reads (no runner: pure arithmetic)."""
    monkeypatch.setattr(judge, "timing", timing, raising=False)  # set by _setup in a real run

    def make():
        j = judge.Evaluation(b"", task="softmax", device="cuda", mode="ranked")
        j.task = TASKS["softmax"]
        j.ceilings = {"bandwidth_bytes_s": 4e12, "peak_flop_s": 8e14}
        return j
    return make


def _row(j, excess, cand=(0.150, 0.152, 0.149, 0.151)):
    shape = dict(TASKS["softmax"].bench_shapes("cuda")[0])
    base = [0.180, 0.181, 0.179, 0.182]
    pairs = [(c + 0.03 + excess, c + 0.05 + excess, 0.001) for c in cand]
    base_pairs = [(b + 0.03, b + 0.05, 0.001) for b in base]
    return j._shape_row(shape, list(cand), [p[1] for p in pairs], [0.3] * 4, base, pairs, base_pairs,
                        excess)


def _hidden(j):
    return [m for c, m in j.codes if c == "clock_disagreement" and "own stream" in m]


def test_no_excess_scores_the_stream_time(bare_judge):
    j = bare_judge()
    row = _row(j, 0.0)
    assert row["candidate_ms"] == pytest.approx(0.1505) and row["after_stream_ms"] == 0.0
    assert row["speedup_vs_compile"] == pytest.approx(0.1805 / 0.1505)
    assert not j.codes


def test_an_excess_past_the_bound_is_flagged_and_charged_in_full(bare_judge):
    j = bare_judge()
    row = _row(j, 0.1)
    assert row["candidate_ms"] == pytest.approx(0.2505) and row["after_stream_ms"] == 0.1
    assert row["candidate_p10_ms"] >= 0.249
    assert row["speedup_vs_compile"] == pytest.approx(0.1805 / 0.2505)
    [msg] = _hidden(j)
    assert "after the call's own stream had finished" in msg


def test_an_excess_under_the_bound_is_host_noise_not_charged(bare_judge):
    # honest runners' gaps differed from the baselines' by up to 14 us on the H200: charging that
    # swung a score by 7 % (docs/gpu-runs/p6/f4)
    j = bare_judge()
    row = _row(j, 0.9 * judge.AFTER_STREAM_ABS_MS)
    assert row["candidate_ms"] == pytest.approx(0.1505)
    assert not j.codes


def test_moving_time_into_the_gap_gains_at_most_the_bound(bare_judge):
    """A patched runner reports its stream times `lie` ms short (its gaps `lie` ms long). Below
    the bound nothing is charged, so it gains up to the bound; past it, all is charged back."""
    honest = _row(bare_judge(), 0.0)["candidate_ms"]
    bound = judge.AFTER_STREAM_ABS_MS
    for lie in (0.01, 0.03, 0.039, 0.05, 0.1):
        j = bare_judge()
        short = tuple(c - lie for c in (0.150, 0.152, 0.149, 0.151))
        row = _row(j, lie, short)
        assert row["candidate_ms"] >= honest - bound - 1e-9
        assert bool(_hidden(j)) == (lie > bound)
        if lie > bound:
            assert row["candidate_ms"] == pytest.approx(honest)


def test_the_bound_grows_with_long_calls(bare_judge):
    long = (1.40, 1.41, 1.39, 1.40)
    j = bare_judge()
    assert _row(j, 0.1, long)["candidate_ms"] == pytest.approx(1.40)  # under 10 % of 1.4 ms
    assert not _hidden(j)
    j = bare_judge()
    assert _row(j, 0.2, long)["candidate_ms"] == pytest.approx(1.60)
    assert _hidden(j)


@pytest.mark.gpu
def test_side_stream_work_is_outside_the_stream_time_and_inside_the_full_time():
    x = torch.randn(4096, 4096, device="cuda")
    flusher = timing.Flusher("cuda")
    side = torch.cuda.Stream()

    def on_side(a):
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(2_000_000)  # about 1 ms of device cycles
            return a * 2

    def on_stream(a):
        torch.cuda._sleep(2_000_000)
        return a * 2

    for fn in (on_stream, on_side):
        fn(x)
    torch.cuda.synchronize()
    d_side, d_own = {}, {}
    _, ms_side = timing.time_call(on_side, (x,), "cuda", flusher, detail=d_side)
    _, ms_own = timing.time_call(on_stream, (x,), "cuda", flusher, detail=d_own)
    assert d_own["stream_ms"] > 0.5 and ms_own - d_own["stream_ms"] < 0.5
    assert d_side["stream_ms"] < 0.3 and ms_side - d_side["stream_ms"] > 0.5


def test_every_call_is_compared_with_its_copy_at_return(evaluate, honest, monkeypatch):
    """Timed calls too, and the baselines' alike (the copy lies between the stream event and the
    end event on both sides); only check calls wait for late host threads first."""
    from evaluator import channel

    sent = []
    real_send = channel.send

    def record(fd, msg):
        if isinstance(msg, dict) and msg.get("op") == "prepare":
            sent.append(dict(msg))
        return real_send(fd, msg)

    monkeypatch.setattr(channel, "send", record)
    r = evaluate(honest, mode="ranked")
    assert r["verdict"] == "verified", r["reasons"]
    candidate = [m for m in sent if "fn" not in m]
    baseline = [m for m in sent if "fn" in m]
    timed = [m for m in candidate if not m["back"] and not m["profile"]]
    assert timed and baseline and any(m["back"] for m in candidate)
    assert all(m["snap"] for m in candidate + baseline)
    assert all((m["settle"] > 0) == m["back"] for m in candidate + baseline)
