"""Add one task to the site: a task folder (task.toml + reference.py) or a KernelBench-style
problem file. Its metadata is read by `python -m evaluator describe` in a box, the problem run
once on the site's device by `python -m evaluator triage`; this process never imports it.

    python manage.py add_task PATH [--track NAME]

One line: `added <name> (<track>)` or `refused <file>: <why>`. Exit status 0 either way; not 0
only when a box could not run (infrastructure)."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.management.taskfiles import add_and_report, default_track, folder_files


class Command(BaseCommand):
    help = "Add a task (a task folder or a KernelBench-style .py file) after describe and triage in a box."

    def add_arguments(self, parser):
        parser.add_argument("path", help="a task folder or a KernelBench-style problem file")
        parser.add_argument("--track", help='the track it joins (default: "kernelbench-levelN" for a file in a '
                                            'levelN/ directory, else "added")')
        parser.add_argument("--device", choices=["cpu", "cuda"], help="where the triage runs (default: the "
                                                                       "site's workers' device)")

    def handle(self, *args, path, track, device, **opts):
        root = Path(path)
        if root.is_file():
            if root.suffix != ".py":
                raise CommandError(f"{path}: a task is a folder or a .py file")
            files = {root.name: root.read_bytes()}
        elif root.is_dir():
            files = folder_files(root, prefix=root.name)
        else:
            raise CommandError(f"{path}: no such file or folder")
        add_and_report(self, files, track=track or default_track(root), device=device)
