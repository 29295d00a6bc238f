from django.shortcuts import render
from django.template.loader import render_to_string

from leaderboard import routing, selectors
from leaderboard.web.pagecache import anonymous_page, cached
from leaderboard.web.present import device_label
from leaderboard.web.result import is_tryout


def _tasks_html() -> str:
    tasks = list(selectors.task_list_with_stats())
    for task in tasks:
        task.best_device_name = device_label(task.best_device_type or "")
    return render_to_string("web/_home_tasks.html", {"tracks": selectors.task_tracks(tasks), "tasks": tasks})


@anonymous_page
def home(request):
    device_type = routing.default_device_type()
    return render(request, "web/home.html", {"tasks_html": cached("home", _tasks_html),
                                             "device_name": device_label(device_type),
                                             "tryout": is_tryout(device_type)})
