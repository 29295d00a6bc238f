"""Write the site's finished evaluations to a JSON file (leaderboard/services/results_file.py)."""
import json

from django.core.management.base import BaseCommand

from leaderboard.services import results_file


class Command(BaseCommand):
    help = "Write every finished submission (and each task's ruler) to a JSON file that import_results loads."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="the file to write")
        parser.add_argument("--device-type", help='only this device type, e.g. "cuda:NVIDIA H200"')

    def handle(self, *args, out, device_type, **opts):
        data = results_file.export(device_type=device_type)
        with open(out, "w") as f:
            json.dump(data, f, indent=1)
        self.stdout.write(f"{len(data['submissions'])} submissions written to {out}")
