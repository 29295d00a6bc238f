from django.shortcuts import render
from django.template.loader import render_to_string

from leaderboard import selectors
from leaderboard.web.pagecache import anonymous_page, cached


def _tasks_html() -> str:
    return render_to_string("web/_home_tasks.html", {"tasks": selectors.task_list_with_stats()})


@anonymous_page
def home(request):
    return render(request, "web/home.html", {"tasks_html": cached("home", _tasks_html)})
