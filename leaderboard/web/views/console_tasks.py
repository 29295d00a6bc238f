"""The audit console's task page: add one task file (a KernelBench-style problem, read by the
worker in boxes: describe, then triage on the site's device), see what came of each addition,
retire a task or bring it back. The web process only stores the file's text; it never imports
it."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard import selectors, services
from leaderboard.models import Task, TaskAddition
from leaderboard.web.forms import TaskFileForm
from leaderboard.web.staff import staff_only

RECENT_ADDITIONS = 20


def _page(request, form, status=200):
    tasks = list(Task.objects.exclude(track=Task.BUILTIN).order_by("track", "name")) + \
        list(Task.objects.filter(track=Task.BUILTIN).order_by("name"))
    for task in tasks:
        task.track_label = selectors.track_label(task.track)
    return render(request, "web/console_tasks.html", {
        "form": form, "tasks": tasks,
        "additions": TaskAddition.objects.select_related("requested_by")[:RECENT_ADDITIONS],
    }, status=status)


@staff_only
def task_console(request):
    if request.method == "POST":
        form = TaskFileForm(request.POST, request.FILES)
        if not form.is_valid():
            return _page(request, form, status=400)
        filename, source = form.cleaned_data["file"]
        try:
            addition = services.task_addition_request(user=request.user, filename=filename, source=source,
                                                      track=form.cleaned_data["track"])
        except ValidationError as exc:
            form.add_error(None, exc)
            return _page(request, form, status=400)
        messages.success(request, f"{addition.filename}: queued for the worker, which reads it in a box and runs "
                                  "it once on its device. This page shows the outcome when it is done.")
        return redirect("console_tasks")
    return _page(request, TaskFileForm())


@staff_only
@require_POST
def task_retire(request, name: str):
    task = Task.objects.filter(name=name).first()
    if task is None:
        raise Http404("No such task")
    undo = request.POST.get("undo") == "1"
    task = services.task_retire(task=task, retired=not undo)
    messages.success(request, f"{task.name}: " + ("retired: no new uploads, its boards stay." if task.retired
                                                  else "takes uploads again."))
    return redirect("console_tasks")
