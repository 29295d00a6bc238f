"""GET /healthz: is the database reachable, is the broker reachable, and does every queue that has
work have a live worker (leaderboard/liveness.py). 200 or 503, JSON, naming the workers per queue."""
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


def _queues() -> dict[str, dict]:
    """{queue: {"work": queued and running submissions, "workers": [live nodes], "ok": bool}} for
    every queue that has work or a live worker."""
    from django.db.models import Count

    from leaderboard import liveness
    from leaderboard.models import Submission
    from leaderboard.routing import eval_queue_for

    live = liveness.live_workers() or {}
    work: dict[str, int] = {}
    rows = (Submission.objects.filter(status__in=(Submission.Status.QUEUED, Submission.Status.RUNNING))
            .values("device_type").annotate(n=Count("pk")))
    for row in rows:
        queue = eval_queue_for(row["device_type"])
        work[queue] = work.get(queue, 0) + row["n"]
    return {q: {"work": work.get(q, 0), "workers": live.get(q, []), "ok": bool(live.get(q)) or not work.get(q)}
            for q in sorted(set(work) | set(live))}


@require_GET
def healthz(request):
    db_ok, db_detail = _database_ok()
    broker_ok, broker_detail = _broker_ok()
    queues = _queues() if db_ok and broker_ok else {}
    ok = db_ok and broker_ok and all(q["ok"] for q in queues.values())
    body = {
        "status": "ok" if ok else "unavailable",
        "database": {"ok": db_ok, "detail": db_detail},
        "broker": {"ok": broker_ok, "detail": broker_detail},
        "queues": queues,
    }
    return JsonResponse(body, status=200 if ok else 503)
