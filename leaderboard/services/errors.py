"""The refusals services raise: each is a ValidationError, so a form or the API shows its message."""
from django.core.exceptions import ValidationError


class RateLimited(ValidationError):
    pass


class QueueFull(RateLimited):
    """The user already has EVAL_MAX_ACTIVE_PER_USER evaluations queued or running."""


class NotAllowed(ValidationError):
    """The action does not apply to the object in its current state (a failed status guard)."""


class KeyReused(ValidationError):
    """An Idempotency-Key this user already sent with another upload (leaderboard/services/idempotency.py)."""
