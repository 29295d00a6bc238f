"""Write a closed competition's standings as JSON Lines (leaderboard/selectors/export.py says what a line holds)."""
from django.core.management.base import BaseCommand, CommandError

from leaderboard.models import Competition
from leaderboard.selectors.export import NotReady, competition_export_lines
from leaderboard.services import competitions


class Command(BaseCommand):
    help = "Export a competition's frozen standings as JSON Lines, one entry a line, to stdout or --output."

    def add_arguments(self, parser):
        parser.add_argument("--competition", required=True, metavar="SLUG")
        parser.add_argument("--output", "-o", default="-", help="a file to write (default: stdout)")

    def handle(self, *args, competition, output, **opts):
        found = Competition.objects.filter(slug=competition).first()
        if found is None:
            known = ", ".join(Competition.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"no competition {competition!r}; known: {known}")
        competitions.competition_freeze_if_due(competition=found)
        try:
            lines = list(competition_export_lines(competition=found))
        except NotReady as exc:
            raise CommandError(str(exc)) from None
        if output == "-":
            for line in lines:
                self.stdout.write(line, ending="")
            return
        with open(output, "w", encoding="utf-8") as f:
            f.writelines(lines)
        self.stderr.write(f"{len(lines)} entries written to {output}")
