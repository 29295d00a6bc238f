"""The CLI's (leaderboard/cli.py) parts: `http`, its one way to call the API, and `output`, what it
prints. Standard library and the evaluator's face only: no Django, no Celery."""
