"""The stuck-submission repair: once, or every S seconds as the site's repair process (`make run`
starts one beside the workers, supervised; it must not live in a worker, which would die with the
worker it repairs)."""
import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections


class Command(BaseCommand):
    help = ("Re-queue submissions whose worker died or whose message was lost; fail them after max attempts. "
            "--every S repeats it until stopped.")

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, metavar="S", help="repeat every S seconds")

    def handle(self, *args, every, **opts):
        from leaderboard.tasks import requeue_stuck_once

        while True:
            try:
                counts = requeue_stuck_once()
                if not every or any(counts.values()):
                    self.stdout.write(", ".join(f"{k}: {v}" for k, v in counts.items()), ending="\n")
                    self.stdout.flush()
            except Exception as exc:  # the database or Redis away: try again next round
                if not every:
                    raise
                self.stderr.write(f"repair failed: {type(exc).__name__}: {exc}")
            if not every:
                return
            close_old_connections()
            time.sleep(every)
