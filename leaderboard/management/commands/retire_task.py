"""Retire a task: out of the upload form and the API's uploads; its boards, results and page stay
(the page says it is retired). `--undo` brings it back.

    python manage.py retire_task NAME [--undo]"""
from django.core.management.base import BaseCommand, CommandError

from leaderboard import services
from leaderboard.models import Task


class Command(BaseCommand):
    help = "Retire a task (no new uploads; boards and pages stay), or bring it back with --undo."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--undo", action="store_true", help="take uploads for it again")

    def handle(self, *args, name, undo, **opts):
        task = Task.objects.filter(name=name).first()
        if task is None:
            raise CommandError(f"no task named {name!r}")
        task = services.task_retire(task=task, retired=not undo)
        state = "retired (no new uploads; its boards stay)" if task.retired else "takes uploads"
        self.stdout.write(f"{task.name}: {state}")
