"""evaluator/contract/words.py: one word per verdict and status, and numbers to three significant
digits."""
import math

import pytest

from evaluator.contract import words
from evaluator.contract.report import VERDICTS


def test_every_verdict_of_the_report_has_a_word():
    for verdict in VERDICTS:
        word = words.verdict_word(verdict)
        assert word and word[0].isupper() and word.lower() == verdict


def test_a_run_that_is_never_ranked_says_so():
    assert words.verdict_word("verified") == "Verified"
    assert words.verdict_word("verified", "test") == "Verified (test run)"
    assert words.verdict_word("rejected", "profile") == "Rejected (profile run)"
    assert words.verdict_word("flagged", "ranked") == "Flagged"
    assert words.verdict_word("verified", "test", hidden=True) == "Disqualified"
    assert words.verdict_word("", "test") == ""
    assert words.verdict_word("odd") == "odd"


def test_status_and_state_words():
    assert [words.status_word(s) for s in ("queued", "running", "done", "failed")] == \
        ["Queued", "Running", "Done", "Failed"]
    assert words.status_word("weird") == "weird" and words.status_word(None) == ""
    assert words.state_word(status="running", verdict="verified") == "Running"
    assert words.state_word(status="done", verdict="flagged") == "Flagged"
    assert words.state_word(status="done", verdict="verified", mode="test") == "Verified (test run)"
    assert words.state_word(status="done") == "Done"
    assert words.state_word(status="done", hidden=True) == "Disqualified"
    assert words.state_word(status="failed", verdict="rejected") == "Failed"


@pytest.mark.parametrize("value, text", [
    (0.00296, "0.00296"), (1.25, "1.25"), (357, "357"), (12345, "12,345"), (0, "0"), (1000, "1,000"),
    (0.1, "0.100"), (-2.5, "-2.50"), (1.234e-8, "1.23e-08"), (math.inf, "inf"), (math.nan, "nan"),
])
def test_significant_writes_three_digits(value, text):
    assert words.significant(value) == text


def test_significant_takes_other_digit_counts():
    assert words.significant(3.14159, 5) == "3.1416"
    assert words.significant(3.14159, 1) == "3"
