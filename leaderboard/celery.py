import os

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

app = Celery("leaderboard")
# All Celery settings live in Django settings under the CELERY_ prefix.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@after_setup_logger.connect
@after_setup_task_logger.connect
def _redact_worker_logs(logger=None, **kwargs):
    """The worker sets up its own log handlers: they get the same filter as the site's."""
    from leaderboard.reporting import RedactingFilter

    for handler in getattr(logger, "handlers", []):
        handler.addFilter(RedactingFilter())
