"""Run the stuck-submission repair once (the worker's beat runs it every 30 s)."""
from django.core.management.base import BaseCommand

from leaderboard import services


class Command(BaseCommand):
    help = "Re-queue submissions whose worker died or whose message was lost; fail them after max attempts."

    def handle(self, *args, **opts):
        from leaderboard.tasks import broker_task_ids

        counts = services.submissions_requeue_stuck(broker_task_ids=broker_task_ids)
        self.stdout.write(", ".join(f"{k}: {v}" for k, v in counts.items()))
