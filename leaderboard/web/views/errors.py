"""The site's own error pages (handler400/403/404/500, the CSRF failure and the 405 and 413 pages).

Each renders with the request, so the header shows who is logged in; the 500 page renders without
it (templates/500.html), since whatever failed may fail again while rendering.
"""
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.shortcuts import render
from django.template import loader
from django.http import HttpResponseServerError
from django.urls import reverse


def bad_request(request, exception=None):
    if isinstance(exception, RequestDataTooBig):
        return too_large(request)
    return render(request, "errors/400.html", status=400)


def too_large(request):
    """A body over DATA_UPLOAD_MAX_MEMORY_SIZE: Django refuses it before any view reads it. On the
    upload address the form comes back empty with the limit named; elsewhere the 413 page."""
    if request.path == reverse("upload") and request.user.is_authenticated:
        from leaderboard.web.views.upload import too_large_form

        return too_large_form(request)
    return render(request, "errors/413.html", {"limit_kib": settings.SUBMISSION_MAX_BYTES // 1024}, status=413)


def permission_denied(request, exception=None):
    return render(request, "errors/403.html", status=403)


def csrf_failure(request, reason=""):
    return render(request, "errors/403.html", {"csrf": True}, status=403)


def page_not_found(request, exception=None):
    return render(request, "404.html", status=404)


def not_allowed(request, allowed: list[str]):
    response = render(request, "errors/405.html", {"allowed": allowed}, status=405)
    response["Allow"] = ", ".join(allowed)
    return response


def server_error(request):
    return HttpResponseServerError(loader.get_template("500.html").render())
