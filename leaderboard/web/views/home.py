from django.shortcuts import render

from leaderboard import selectors
from leaderboard.web.pagecache import cached


def _rows() -> list[dict]:
    return [
        {
            "name": task.name,
            "title": task.title,
            "description": task.description,
            "best_speedup": task.best_speedup,
            "submission_count": task.submission_count,
        }
        for task in selectors.task_list_with_stats()
    ]


def home(request):
    return render(request, "web/home.html", {"tasks": cached("home", _rows)})
