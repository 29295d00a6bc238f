"""Create an API token for a user; the key is printed once and only its hash is stored."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard import services


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print it once."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label to tell tokens apart")

    def handle(self, *args, username, name, **opts):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        _, key = services.api_token_create(user=user, name=name)
        self.stdout.write(key)
