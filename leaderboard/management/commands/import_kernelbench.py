"""Import the problems of a local checkout laid out like KernelBench's (DIR/level1/*.py,
DIR/level2/*.py, ...): each level a track of its own (`kernelbench-level1`), each problem read by
`python -m evaluator describe` and run once on the site's device by `python -m evaluator triage`,
one box of each per level. This process never imports a problem file.

    python manage.py import_kernelbench DIR [--level N ...] [--only ID,...]

`--only` takes problem numbers (a file name's leading integer: 19 for 19_ReLU.py) or task names.
One line per problem: `added <name> (<track>)` or `refused <file>: <why>`. Exit status 0 whatever
was refused; not 0 only when a box could not run (infrastructure)."""
import re
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard.management.taskfiles import add_and_report
from leaderboard.services.task_additions import kernelbench_name

LEVEL = re.compile(r"^level(\d{1,3})$")


def wanted(filename: str, only: set[str]) -> bool:
    """Whether `--only` names this problem: by its leading number or its task name."""
    if not only:
        return True
    number = re.match(r"^(\d+)", filename)
    return (number is not None and str(int(number.group(1))) in only) or kernelbench_name(filename) in only


class Command(BaseCommand):
    help = "Import a KernelBench-style checkout's problems (DIR/levelN/*.py), a line per problem."

    def add_arguments(self, parser):
        parser.add_argument("dir", help="the checkout: DIR/level1/*.py, DIR/level2/*.py, ...")
        parser.add_argument("--level", type=int, action="append", help="only this level (repeatable)")
        parser.add_argument("--only", default="", help="problem numbers or task names, comma-separated")
        parser.add_argument("--device", choices=["cpu", "cuda"], help="where the triage runs (default: the "
                                                                       "site's workers' device)")

    def handle(self, *args, dir, level, only, device, **opts):
        root = Path(dir)
        if not root.is_dir():
            raise CommandError(f"{dir}: no such directory")
        levels = sorted((int(m.group(1)), p) for p in root.iterdir()
                        if p.is_dir() and (m := LEVEL.match(p.name)))
        if level:
            missing = sorted(set(level) - {n for n, _ in levels})
            if missing:
                raise CommandError(f"{dir}: no level{missing[0]}/ directory")
            levels = [(n, p) for n, p in levels if n in level]
        if not levels:
            raise CommandError(f"{dir}: no levelN/ directory (a checkout laid out like KernelBench's)")
        only_set = {o.strip().lower() for o in only.split(",") if o.strip()}
        only_set = {str(int(o)) if o.isdigit() else o for o in only_set}
        for number, path in levels:
            files = {f.name: f.read_bytes() for f in sorted(path.iterdir())
                     if f.is_file() and f.suffix == ".py" and wanted(f.name, only_set)}
            # a problem's own overrides beside it (19_ReLU.toml): travel with it
            stems = {name.rsplit(".", 1)[0] for name in files}
            files.update({f.name: f.read_bytes() for f in sorted(path.iterdir())
                          if f.is_file() and f.suffix == ".toml" and f.stem in stems})
            if not any(name.endswith(".py") for name in files):
                continue
            add_and_report(self, files, track=f"kernelbench-level{number}", device=device)
