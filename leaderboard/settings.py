"""Settings, all from environment variables with defaults that work on a fresh checkout.

Defaults: DEBUG off, SQLite under var/, Redis on localhost. `DATABASE_URL` switches to PostgreSQL.
With DEBUG off (a deployment) the site refuses to start without SECRET_KEY and ALLOWED_HOSTS, with a
weak SECRET_KEY, or with ALLOWED_HOSTS "*"; no secret has a committed value. The test suite sets DEBUG=1 for itself; `make run` runs with DEBUG off
(scripts/run.sh) unless asked.
"""
import os
from pathlib import Path

from evaluator import MAX_BYTES

from leaderboard.envutil import (ConfigError, database_from_url, envbool, envint, envstr, private_file,
                                 weak_secret_key, write_private)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# Off unless asked for: a deployment that forgets it must not serve debug pages
DEBUG = envbool("DEBUG", False)
SECRET_KEY = envstr("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigError("SECRET_KEY must be set when DEBUG is off")
    # A per-checkout random key, written once under var/ (ignored by git), so that sessions
    # survive restarts in development without any committed secret.
    key_file = VAR_DIR / "dev-secret-key"
    if not key_file.exists():
        import secrets

        write_private(key_file, secrets.token_urlsafe(50))
    SECRET_KEY = key_file.read_text().strip()

if not DEBUG and weak_secret_key(SECRET_KEY):
    raise ConfigError("SECRET_KEY is too weak for a site with DEBUG off: it needs at least 50 characters, "
                      "5 of them different, and no 'django-insecure-' prefix (python -c 'import secrets; "
                      "print(secrets.token_urlsafe(50))')")

ALLOWED_HOSTS = [h.strip() for h in envstr("ALLOWED_HOSTS", "").split(",") if h.strip()]
if not ALLOWED_HOSTS:
    if not DEBUG:
        raise ConfigError("ALLOWED_HOSTS must be set when DEBUG is off (comma separated host names)")
    ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
if not DEBUG and "*" in ALLOWED_HOSTS:
    # "*" answers any Host header: password-reset links and absolute URLs could name an attacker's host
    raise ConfigError("ALLOWED_HOSTS must name the site's hosts when DEBUG is off, not '*'")
CSRF_TRUSTED_ORIGINS = [o for o in envstr("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_ratelimit",
    # the API (leaderboard/api/); listed so that its docs page and static files come from here
    "ninja",
    "leaderboard",
]

MIDDLEWARE = [
    # an API answer to a token is the caller's: Cache-Control: private
    "leaderboard.serving.middleware.ApiPrivateMiddleware",
    "leaderboard.serving.middleware.ApiHeadMiddleware",
    # every error answer under /api/ becomes JSON, whichever layer made it
    "leaderboard.serving.errors.ApiErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "leaderboard.serving.middleware.RefuseTraceMiddleware",
    "leaderboard.serving.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # a form's body too large to read: the site's 413, before the CSRF check's read of it logs a traceback
    "leaderboard.serving.errors.TooLargeFormMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "leaderboard.serving.errors.NotAllowedPageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASE_URL = envstr("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    # created here, 0600, before SQLite makes it with the umask's mode (its journal and WAL
    # files copy the database file's mode)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": private_file(VAR_DIR / "db.sqlite3"),
            # Web server and worker write at once in `make run`: wait for the lock, don't fail.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
# The web server's threads that run Django, per process (leaderboard/asgi.py): the requests it
# runs at once, each thread with its own persistent database connection; the others wait their
# turn as coroutines.
WEB_THREADS = envint("WEB_THREADS", 16)
# A request's whole body must reach the web server within this, read before it takes a thread
# (leaderboard/serving/asgi_body.py: a 408 past it)
WEB_BODY_DEADLINE_S = envint("WEB_BODY_DEADLINE_S", 20)
# The API keeps a caller's reads of their own work (leaderboard/api/owncache.py): an answer that
# names an unfinished submission at most this long (its place in line and time elapsed move)
API_OWN_UNFINISHED_MAX_AGE_S = envint("API_OWN_UNFINISHED_MAX_AGE_S", 2)
API_OWN_CACHE_MAX_BYTES = envint("API_OWN_CACHE_MAX_BYTES", 32 << 20)
# a queued submission's place in line and its task's typical duration, read at most this often per
# process (leaderboard/selectors/queue.py)
QUEUE_READS_MAX_AGE_S = envint("QUEUE_READS_MAX_AGE_S", 1)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Mail (password reset links): printed on the console unless an SMTP host is set (docs/deployment.md)
EMAIL_HOST = envstr("EMAIL_HOST", "")
EMAIL_BACKEND = ("django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST
                 else "django.core.mail.backends.console.EmailBackend")
EMAIL_PORT = envint("EMAIL_PORT", 587)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "webmaster@localhost")
LOGIN_URL = "login"
# a refused form (expired page, cookies off) gets the site's 403 page, which says what to do
CSRF_FAILURE_VIEW = "leaderboard.serving.errors.csrf_failure"  # JSON under /api/, else the page
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# Django's two finders; a path outside their directories is a 404, not a 500 (leaderboard/serving/staticfinders.py)
STATICFILES_FINDERS = ["leaderboard.serving.staticfinders.FileSystemFinder",
                       "leaderboard.serving.staticfinders.AppDirectoriesFinder"]

if not DEBUG:
    SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES", True)
# Behind a TLS-terminating proxy (README "Deployment"): trust its X-Forwarded-Proto only when told to
if envbool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
# Scripts from this site only (static/): no inline script, no eval, no other origin. Styles allow
# inline because plotly and htmx add <style> elements at run time. Set empty: no header (a proxy
# that sends its own).
CONTENT_SECURITY_POLICY = os.environ.get(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'",
)
# Error reports (debug pages, mail to admins, logged request data) mask settings and variables
# whose names hold a URL or a DSN too: their values carry database and broker passwords
DEFAULT_EXCEPTION_REPORTER_FILTER = "leaderboard.reporting.MaskingReporterFilter"

# --- Throttles (leaderboard/web/throttle.py) ------------------------------------------------
# Counters live in Redis, shared by every web process; django-ratelimit's rate syntax.
LOGIN_FAILURES_PER_IP = envstr("LOGIN_FAILURES_PER_IP", "20/15m")
LOGIN_FAILURES_PER_ACCOUNT = envstr("LOGIN_FAILURES_PER_ACCOUNT", "5/15m")
SIGNUPS_PER_IP = envstr("SIGNUPS_PER_IP", "5/h")
# password-reset requests (each sends a mail): per client, and per e-mail address from anywhere
PASSWORD_RESETS_PER_IP = envstr("PASSWORD_RESETS_PER_IP", "10/h")
PASSWORD_RESETS_PER_EMAIL = envstr("PASSWORD_RESETS_PER_EMAIL", "3/h")
# profile-mode runs per account (leaderboard/services/profiling.py), on top of UPLOAD_RATE_LIMIT_PER_HOUR
PROFILES_PER_USER = envstr("PROFILES_PER_USER", "10/h")
RATELIMIT_USE_CACHE = "throttle"
# Behind a proxy every client has the proxy's address: name the header it sets (HTTP_X_REAL_IP)
RATELIMIT_IP_META_KEY = envstr("RATELIMIT_IP_META_KEY", "") or None
# two sites on one Redis keep their counters apart under different prefixes
RATELIMIT_CACHE_PREFIX = envstr("RATELIMIT_CACHE_PREFIX", "rl:")
# The proxies whose X-Forwarded-For and X-Forwarded-Proto name the client (leaderboard/asgi.py):
# none unless the deployment says so, since any client can send those headers itself
TRUSTED_PROXY_IPS = [h.strip() for h in envstr("TRUSTED_PROXY_IPS", "").split(",") if h.strip()]
# Django's own Redis cache increments atomically, which is all django-ratelimit needs
SILENCED_SYSTEM_CHECKS = ["django_ratelimit.W001"]

# --- Celery -------------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html
REDIS_URL = envstr("REDIS_URL", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                 "KEY_PREFIX": "lb-throttle", "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2}},
}
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None  # results live in the database, not the broker
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# acks_late + prefetch 1: a worker killed mid-evaluation leaves the message to be redelivered
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis redelivers unacked messages after this; longer than the longest evaluation
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", 3600)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)

# --- Evaluation -------------------------------------------------------------------------------
# The device type this site's workers evaluate on; one queue per device type ("eval-cpu",
# "eval-cuda-h200", ...). A worker serves exactly one queue with concurrency 1.
WORKER_DEVICE = envstr("WORKER_DEVICE", "cpu")  # cpu | cuda
WORKER_GPU_INDEX = envint("WORKER_GPU_INDEX", 0)
EVAL_QUEUE = envstr("EVAL_QUEUE", f"eval-{WORKER_DEVICE}")
SANDBOX_BACKEND = envstr("SANDBOX_BACKEND", "")  # docker | bwrap | "" = pick
SANDBOX_TIME_LIMIT_S = envint("SANDBOX_TIME_LIMIT_S", 300)
# a GPU worker's warm-up of one task's baselines (sandbox/warm.py), once per task and process
SANDBOX_WARM_LIMIT_S = envint("SANDBOX_WARM_LIMIT_S", 180)
# one box that reads task definitions (python -m evaluator describe or triage) over everything one
# addition holds: a level of problems is one box, each problem run once on the device
TASK_BOX_LIMIT_S = envint("TASK_BOX_LIMIT_S", 900)
# the one limit on an upload's size, the evaluator's (evaluator/contract/upload.py): the form and
# the API refuse a larger file before reading it, in the site's words, and check_upload again
SUBMISSION_MAX_BYTES = MAX_BYTES
UPLOAD_RATE_LIMIT_PER_HOUR = envint("UPLOAD_RATE_LIMIT_PER_HOUR", 30)
# evaluations one user may have queued or running at a time; the worker takes users in turn
EVAL_MAX_ACTIVE_PER_USER = envint("EVAL_MAX_ACTIVE_PER_USER", 2)
# days after a competition's close during which a ranked upload to its tasks is shown as "after
# the deadline" (on its page and the competition's); later uploads have nothing to do with it
COMPETITION_LATE_DAYS = envint("COMPETITION_LATE_DAYS", 14)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "leaderboard.reporting.RedactingFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}

# --- Pipeline clocks (leaderboard/services/pipeline.py and leaderboard/tasks.py; docs/site.md) ---
EVAL_MAX_ATTEMPTS = envint("EVAL_MAX_ATTEMPTS", 3)  # claims of one submission before it is marked failed
EVAL_RETRY_BACKOFF_S = envint("EVAL_RETRY_BACKOFF_S", 10)  # first retry after an infrastructure error; doubles
EVAL_OVERHEAD_S = envint("EVAL_OVERHEAD_S", 120)  # sandbox start and teardown on top of SANDBOX_TIME_LIMIT_S
EVAL_HEARTBEAT_S = envint("EVAL_HEARTBEAT_S", 10)  # a running evaluation touches its row this often
EVAL_STALE_AFTER_S = envint("EVAL_STALE_AFTER_S", 90)  # no heartbeat for this long: the worker is gone
EVAL_LOST_MESSAGE_AFTER_S = envint("EVAL_LOST_MESSAGE_AFTER_S", 120)  # queued and not in the broker: resend
EVAL_REAPER_INTERVAL_S = envint("EVAL_REAPER_INTERVAL_S", 30)  # how often the beat runs the repair job
# each worker renews a key in Redis this often; gone this long after its last renewal, the worker
# counts as dead (leaderboard/liveness.py)
WORKER_ALIVE_EVERY_S = envint("WORKER_ALIVE_EVERY_S", 10)
WORKER_ALIVE_TTL_S = envint("WORKER_ALIVE_TTL_S", 30)
# The Celery task's limits. The sandbox enforces SANDBOX_TIME_LIMIT_S itself; these catch a sandbox
# that hangs (soft: the task gives up and retries; hard: the worker process is killed).
EVAL_SOFT_LIMIT_S = SANDBOX_TIME_LIMIT_S + EVAL_OVERHEAD_S + (SANDBOX_WARM_LIMIT_S if WORKER_DEVICE == "cuda" else 0)
EVAL_HARD_LIMIT_S = int(EVAL_SOFT_LIMIT_S * 1.2)
# The GPU model of this site's workers ("NVIDIA H200"): submissions get device type "cuda:<name>",
# one leaderboard per device type.
WORKER_GPU_NAME = envstr("WORKER_GPU_NAME", "")
