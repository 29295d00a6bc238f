"""Load a file that export_results wrote into this site (leaderboard/services/results_file.py): the boards
of a GPU host, looked at on a machine without one."""
import json

from django.core.management.base import BaseCommand, CommandError

from leaderboard.services import results_file


class Command(BaseCommand):
    help = "Load the submissions of a results file (export_results, bench/results/gpu-site/) into this site."

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, file, **opts):
        try:
            with open(file) as f:
                data = json.load(f)
            counts = results_file.load(data)
        except (OSError, ValueError) as exc:
            raise CommandError(f"{file}: {exc}") from None
        self.stdout.write(f"{counts['created']} submissions loaded, {counts['skipped']} already here, "
                          f"{counts['users']} users made (they cannot log in)")
