from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The Celery app, configured from these settings, is loaded with Django (web server,
        # management commands, tests) so that the tasks' @shared_task binds to it and every send
        # goes to CELERY_BROKER_URL.
        from leaderboard import celery  # noqa: F401
