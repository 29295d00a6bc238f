"""Template filters that print a submission's state in the one vocabulary of evaluator.contract.words:
"Verified (test run)", "Flagged", "Disqualified", "Queued"."""
from __future__ import annotations

from django import template

from evaluator import state_word, status_word

register = template.Library()


@register.filter
def state(submission) -> str:
    """Its verdict once it has one, else its status."""
    return state_word(status=submission.status, verdict=submission.verdict, mode=submission.mode,
                      hidden=submission.hidden)


@register.filter
def status(value: str) -> str:
    return status_word(value)


@register.filter
def badge(submission) -> dict:
    """{"css", "text"} of its badge (leaderboard.web.present.badge)."""
    from leaderboard.web.present import badge as make

    return make(submission)
