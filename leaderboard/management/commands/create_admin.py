"""Create an admin account with a random password, printed once."""
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create a superuser with a random password that is printed once."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--email", default="")
        parser.add_argument("--if-missing", action="store_true",
                            help="do nothing when a superuser already exists")

    def handle(self, *args, username, email, if_missing, **opts):
        User = get_user_model()
        if if_missing and User.objects.filter(is_superuser=True).exists():
            self.stdout.write("a superuser exists already; nothing to do")
            return
        if User.objects.filter(username=username).exists():
            raise CommandError(f"a user named {username!r} exists already")
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email=email, password=password)
        self.stdout.write(f"admin account created: username {username}  password {password}")
        self.stdout.write("(the password is shown only this once; change it in the admin)")
