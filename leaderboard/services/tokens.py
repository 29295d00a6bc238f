"""API tokens: the key is shown once; only its hash is stored."""
from __future__ import annotations

import secrets
from datetime import timedelta

from django.utils import timezone

from leaderboard.models import ApiToken

USE_RECORDED_EVERY = timedelta(minutes=1)  # a write per request would cost more than the read


def api_token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """A new token; the key is returned once and only its hash is kept."""
    key = "lb_" + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name[:100], prefix=key[:8], key_hash=ApiToken.hash_key(key))
    return token, key


def api_token_authenticate(*, key: str):
    """The active user owning this key, or None. Records when the token was last used."""
    if not key or len(key) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=ApiToken.hash_key(key)).first()
    if token is None or not token.user.is_active:
        return None
    api_token_used(token_id=token.pk, last_used_at=token.last_used_at)
    return token.user


def api_token_used(*, token_id: int, last_used_at) -> None:
    """Records a use, at most once every USE_RECORDED_EVERY."""
    now = timezone.now()
    if last_used_at is None or now - last_used_at > USE_RECORDED_EVERY:
        ApiToken.objects.filter(pk=token_id).update(last_used_at=now)


def api_token_revoke(*, user, token_id: int) -> bool:
    return ApiToken.objects.filter(pk=token_id, user=user).delete()[0] > 0


