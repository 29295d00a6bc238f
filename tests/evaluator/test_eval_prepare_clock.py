"""The judge's clock around `prepare`: the candidate's runner builds the same inputs as the trusted
baseline runner, so taking far longer means work moved out of the timed call."""
from evaluator.checks import prepare_disagreement


def test_the_same_prepare_time_is_not_a_disagreement():
    assert prepare_disagreement([1.0, 1.1, 0.9], [1.0, 1.05, 0.95], device="cpu") is None
    assert prepare_disagreement([4.0, 4.2, 3.9], [4.1, 4.0, 4.3], device="cuda") is None


def test_an_answer_computed_while_the_inputs_are_built_is_caught():
    message = prepare_disagreement([114.0, 115.0, 113.0], [0.9, 0.95, 0.85], device="cpu")
    assert message and "114 ms" in message and "0.9 ms" in message


def test_the_slack_is_relative_plus_absolute_and_uses_medians():
    # GPU: 1.5x the baseline's median + 2 ms; one slow call (a hiccup) does not move a median
    assert prepare_disagreement([4.9, 5.0, 90.0], [2.0, 2.0, 2.0], device="cuda") is None
    assert prepare_disagreement([5.1, 5.2, 5.3], [2.0, 2.0, 2.0], device="cuda") is not None
    # CPU: 2x + 25 ms
    assert prepare_disagreement([44.0] * 3, [10.0] * 3, device="cpu") is None
    assert prepare_disagreement([46.0] * 3, [10.0] * 3, device="cpu") is not None
    assert prepare_disagreement([44.0] * 3, [10.0] * 3, device="cuda") is not None


def test_no_samples_no_verdict():
    assert prepare_disagreement([], [1.0], device="cpu") is None
    assert prepare_disagreement([100.0], [], device="cpu") is None
