"""Evaluate one file exactly as a worker does (through the sandbox), print a summary, write the JSON."""
import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from leaderboard import scoring
from leaderboard.client.output import verdict_lines
from leaderboard.models import Task


def rejected_report(problems: list[tuple[str, str]], *, task: str, mode: str, device: str):
    """The report (evaluator.Report) the judge writes for an upload it refuses (evaluator.check_upload)."""
    from evaluator import Report, empty_report, verdict_for

    report = empty_report(task=task, mode=mode, device=device)
    codes = [code for code, _ in problems]
    report.update(reason_codes=codes, reasons=[message for _, message in problems], verdict=verdict_for(codes))
    return Report.from_untrusted(report)


class Command(BaseCommand):
    help = "Run FILE through the sandbox and the evaluator as a worker would, and print the result."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--task", required=True)
        parser.add_argument("--mode", choices=["test", "ranked", "profile"], default="ranked")
        parser.add_argument("--device", choices=["cpu", "cuda"], default=settings.WORKER_DEVICE)
        parser.add_argument("--json", dest="json_out", help="write the report here")

    def handle(self, *args, file, task, mode, device, json_out, **opts):
        from evaluator import check_upload
        from sandbox import SandboxError

        from leaderboard.tasks import sandbox_evaluate

        path = Path(file)
        if not path.is_file():
            raise CommandError(f"no such file: {file}")
        data = path.read_bytes()
        problems = check_upload(data)
        if problems:
            # the contract of `python -m evaluator run`: a file the judge would refuse to run is
            # an evaluation that completed with a rejected report, exit status 0
            report, result = rejected_report(problems, task=task, mode=mode, device=device), None
        else:
            try:
                # a task the site added brings its stored definition into the box
                row = Task.objects.filter(name=task).only("definition").first()
                result = sandbox_evaluate(source=data, task=task, mode=mode, device=device,
                                          definition=row.definition if row else None)
            except SandboxError as exc:
                raise CommandError(f"sandbox error (infrastructure, not the kernel): {exc}") from None
            report = result.report
        if json_out:
            Path(json_out).write_text(json.dumps(report.to_json(), indent=2))
        self._summary(report, result)

    def _summary(self, report, result):
        from evaluator import time_split

        w = self.stdout.write
        w(f"task {report.task}  mode {report.mode}  device {report.device}"
          f"{'  gpu ' + report.gpu_name if report.gpu_name else ''}")
        for line in verdict_lines(report.to_json()):
            w(line)
        task = Task.objects.filter(name=report.task).first()
        shapes = report.shape_dicts()
        if shapes:
            pcts = (scoring.pct_of_floor_by_shape(task=task, device_type=report.device_type, shapes=shapes)
                    if task else [None] * len(shapes))
            w(f"{'shape':<28}{'candidate ms':>14}{'eager ms':>12}{'compile ms':>12}{'vs compile':>12}{'% floor':>9}")
            for row, pct in zip(report.shapes, pcts):
                def ms(v):
                    return f"{v:.4f}" if isinstance(v, (int, float)) else "-"
                sp = row.speedup_vs_compile
                w(f"{json.dumps(dict(row.shape)):<28}{ms(row.candidate_ms):>14}{ms(row.eager_ms):>12}"
                  f"{ms(row.compile_ms):>12}{(f'{sp:.3f}x' if sp else '-'):>12}{(f'{pct:.0f}' if pct else '-'):>9}")
        if report.profile:
            from evaluator import profile_summary

            w("\n".join(profile_summary(report.profile)))
        w("time: " + time_split(report.phases.to_json()))
        if result is not None:
            w(f"sandbox: {result.backend}, {result.wall_s:.1f} s wall ({result.overhead_s:.1f} s overhead)")
        else:
            w("not run: the judge refuses this file before anything runs")
