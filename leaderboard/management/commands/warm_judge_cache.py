"""Compile the tasks' baselines into the worker's judge cache before it serves evaluations
(sandbox/warm.py): a deployment step, so that no ranked evaluation waits for a cold compile."""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = ("Warm the judge's cache (SANDBOX_JUDGE_CACHE): compile each task's baselines in the sandbox, "
            "as this worker's evaluations would.")

    def add_arguments(self, parser):
        parser.add_argument("--task", action="append", help="only this task (repeatable; default: every task)")
        parser.add_argument("--device", choices=["cpu", "cuda"], default=settings.WORKER_DEVICE)

    def handle(self, *args, task, device, **opts):
        import sandbox
        from evaluator import TASKS
        from leaderboard.tasks import sandbox_limits

        names = task or sorted(TASKS)
        unknown = [n for n in names if n not in TASKS]
        if unknown:
            raise CommandError(f"unknown task {unknown[0]!r}; known: {', '.join(sorted(TASKS))}")
        if not sandbox.judge_cache(device):
            raise CommandError(f"the judges of a {device} worker keep no cache to warm here: SANDBOX_JUDGE_CACHE "
                               "is off (unset or a directory keeps one)")
        failed = 0
        for i, name in enumerate(names, start=1):
            # the name before the compile, which takes minutes on a GPU: progress that shows
            self.stdout.write(f"{name} ({i}/{len(names)}) ...", ending="")
            self.stdout.flush()
            try:
                result = sandbox.warm_tasks([name], device=device, backend=settings.SANDBOX_BACKEND or None,
                                            limits=sandbox_limits(device, settings.SANDBOX_WARM_LIMIT_S))[0]
            except sandbox.SandboxError as exc:
                self.stdout.write(" sandbox error")
                raise CommandError(f"sandbox error (infrastructure): {exc}") from None
            failed += result.get("state") not in ("compiled", "already warm")
            seconds = f" in {result['seconds']:.1f} s" if result.get("seconds") else ""
            self.stdout.write(f" {result.get('state')}{seconds}"
                              + (f": {result['error']}" if result.get("error") else ""))
        if failed:
            raise CommandError(f"{failed} of {len(names)} tasks did not warm")
