"""The API under /api/, as one django-ninja app: its operations (views.py, task_views.py, competition_views.py),
its schema at /api/openapi.json and the page to read and try it at /api/docs (Swagger UI, from
ninja's own static files: no CDN). URL names live in the namespace "api" ("api:submission").

No CSRF check: ninja exempts every operation, since the API knows its callers by the
Authorization header alone and a cross-site form cannot send one; a method an address does not
take meets its 405 (with Allow), not a CSRF refusal."""
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from ninja import NinjaAPI

from leaderboard.api import competition_views, errors, task_views, views

DESCRIPTION = """\
The leaderboard's API for scripts and agents: submit a kernel, follow it to its verdict, read the
boards and the competitions.

**Authentication**: `Authorization: Token <key>` (create a key on your profile page). Operations
marked with the lock need it; the others answer without one with what is public.

**Errors**: every answer that is not a success is one JSON shape, `ApiError`:
`{"error": "<words for a person>", "code": "<machine code>", ...}`, with `Allow` on a 405 and
`Retry-After` (seconds) on a 429. An address that is not in this schema answers 404 in that shape.

**Idempotent uploads**: send `Idempotency-Key: <a new UUID>` with `POST /api/submissions`; a retry
with the same key and the same upload within 24 hours answers 200 with the first submission and
creates nothing.
"""


def get_only(view):
    """The schema and the docs page: GET only, and like the operations a 405 for anything else,
    never a CSRF refusal."""
    return csrf_exempt(require_GET(view))


api = NinjaAPI(title="Kernel leaderboard API", version="1", description=DESCRIPTION, urls_namespace="api",
               docs_decorator=get_only)
errors.install(api)


@api.get("/", summary="Where to start", url_name="index", include_in_schema=False)
def index(request):
    """GET /api/: the addresses to start from, for a person who typed it and a program alike."""
    def at(name):
        return request.build_absolute_uri(reverse(name))

    return {"docs": at("api:openapi-view"), "openapi": at("api:openapi-json"), "tasks": at("api:tasks"),
            "submissions": at("api:submissions"), "competitions": at("api:competitions"),
            "authentication": "Authorization: Token <key>; create a key on your profile page"}


api.add_router("", views.router)
api.add_router("", task_views.tasks)
api.add_router("", competition_views.router)

app_name = "api"
urlpatterns = api.urls[0]
