"""GET /healthz: is the database reachable, is the broker reachable. 200 or 503, JSON."""
from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from leaderboard.reporting import redact


def _database_ok() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return True, "ok"
    except Exception as exc:  # any failure means "not reachable"; report what it was
        return False, redact(f"{type(exc).__name__}: {exc}")[:200]


def _broker_ok() -> tuple[bool, str]:
    import redis

    try:
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=1, socket_timeout=1)
        client.ping()
        return True, "ok"
    except Exception as exc:
        return False, redact(f"{type(exc).__name__}: {exc}")[:200]


@require_GET
def healthz(request):
    db_ok, db_detail = _database_ok()
    broker_ok, broker_detail = _broker_ok()
    ok = db_ok and broker_ok
    body = {
        "status": "ok" if ok else "unavailable",
        "database": {"ok": db_ok, "detail": db_detail},
        "broker": {"ok": broker_ok, "detail": broker_detail},
    }
    return JsonResponse(body, status=200 if ok else 503)
