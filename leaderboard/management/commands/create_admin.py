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
        existing = User.objects.filter(is_superuser=True).order_by("pk").first()
        if if_missing and existing is not None:
            # its password was printed on the first run only: say how to set a new one
            name = existing.get_username()
            self.stdout.write(f"the admin account {name} exists already (its password was printed when it was "
                              f"created; to set a new one: .venv/bin/python manage.py changepassword {name})")
            return
        if User.objects.filter(username=username).exists():
            raise CommandError(f"a user named {username!r} exists already")
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email=email, password=password)
        self.stdout.write(f"admin account created: username {username}  password {password}")
        self.stdout.write("(the password is shown only this once; change it in the admin)")
