"""Create or update the built-in Task rows from what `python -m evaluator describe` says of the
evaluator's own tasks in a box (text, shapes, tolerances, work per benchmark shape), with roofline
floors per device type. This process never imports a task's code."""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from leaderboard import scoring, services
from leaderboard.services.catalog import site_ceilings


class Command(BaseCommand):
    help = "Sync the built-in Task rows from the evaluator (describe, in a box), with roofline floors per device type."

    def add_arguments(self, parser):
        parser.add_argument("--cpu-bandwidth", type=float, default=scoring.CEILINGS["cpu"]["bandwidth_bytes_s"],
                            help="CPU memory bandwidth ceiling, bytes/s (for the CPU floors)")
        parser.add_argument("--cpu-flops", type=float, default=scoring.CEILINGS["cpu"]["peak_flop_s"],
                            help="CPU peak arithmetic ceiling, FLOP/s (for the CPU floors)")

    def handle(self, *args, **opts):
        from sandbox import SandboxError

        ceilings = site_ceilings({"bandwidth_bytes_s": opts["cpu_bandwidth"], "peak_flop_s": opts["cpu_flops"]})
        try:
            rows = services.tasks_load_builtin(ceilings=ceilings)
        except SandboxError as exc:
            raise CommandError(f"sandbox error (infrastructure): {exc}") from None
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        for task, created in rows:
            self.stdout.write(f"{'created' if created else 'updated'} {task.name}: {task.title}")
        # the site's own tasks keep their stored work: their floors follow the ceilings too
        services.tasks_refloor(ceilings=ceilings)
        self.stdout.write(self.style.SUCCESS(f"{len(rows)} tasks loaded"))
