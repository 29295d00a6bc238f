"""The site: a Django project and its Celery app (leaderboard/celery.py).

Nothing is imported here, so that the CLI (`python -m leaderboard.cli`) loads neither Django nor
Celery. The Celery app is loaded by the worker (`celery -A leaderboard` finds leaderboard.celery)
and, in every process that sets up Django, by LeaderboardConfig.ready() (leaderboard/apps.py).
"""
