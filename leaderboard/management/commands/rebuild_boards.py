"""The boards' read model (models.BoardEntry) built anew from the submissions: after loading rows
by other means than the services (a restored dump, a bulk seed), or to check it."""
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Rebuild every board's entries from the submissions (--check: only say whether they differ)."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="compare, change nothing; exit 1 if they differ")

    def handle(self, *args, check, **opts):
        from leaderboard.services import boards

        if check:
            built, kept = boards.board_entries_built(), boards.board_entries_kept()
            self.stdout.write(f"{len(kept)} entries kept, {len(built)} built from the submissions, "
                              f"{len(built ^ kept)} differ")
            if built != kept:
                raise SystemExit(1)
            return
        self.stdout.write(f"{boards.boards_rebuild()} board entries")
