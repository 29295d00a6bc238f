"""Create or update the Task rows from evaluator.tasks (text, shapes, tolerances, roofline floors)."""
from django.core.management.base import BaseCommand

from leaderboard import scoring, services


class Command(BaseCommand):
    help = "Sync Task rows from the evaluator's task registry, with roofline floors per device type."

    def add_arguments(self, parser):
        parser.add_argument("--cpu-bandwidth", type=float, default=scoring.CEILINGS["cpu"]["bandwidth_bytes_s"],
                            help="CPU memory bandwidth ceiling, bytes/s (for the CPU floors)")
        parser.add_argument("--cpu-flops", type=float, default=scoring.CEILINGS["cpu"]["peak_flop_s"],
                            help="CPU peak arithmetic ceiling, FLOP/s (for the CPU floors)")

    def handle(self, *args, **opts):
        from evaluator import TASKS

        ceilings = dict(scoring.CEILINGS)
        ceilings["cpu"] = {"bandwidth_bytes_s": opts["cpu_bandwidth"], "peak_flop_s": opts["cpu_flops"]}
        for name, spec in sorted(TASKS.items()):
            task, created = services.task_sync(spec=spec, ceilings=ceilings)
            self.stdout.write(f"{'created' if created else 'updated'} {task.name}: {task.title}")
        self.stdout.write(self.style.SUCCESS(f"{len(TASKS)} tasks loaded"))
