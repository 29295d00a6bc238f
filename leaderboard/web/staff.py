"""The audit console's door: staff only, through the site's own pages.

Django's staff_member_required sends everyone else to the admin's login page, a page of another
look that a visitor of /audit/ never chose; here a visitor who is not logged in goes to the site's
login page (settings.LOGIN_URL) and comes back after it, and a logged-in user who is not staff gets
the site's 403 page, since logging in again would not help."""
from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied


def staff_only(view):
    @wraps(view)
    def door(request, *args, **kwargs):
        user = request.user
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (user.is_active and user.is_staff):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return door
