from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render

from leaderboard import routing, services
from leaderboard.selectors.competitions import open_for_upload
from leaderboard.web.forms import UploadForm
from leaderboard.web.present import device_label
from leaderboard.web.result import is_tryout


@login_required
def upload(request):
    if request.method == "POST":
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            try:
                submission = services.submission_create(
                    user=request.user,
                    task=data["task"],
                    source=data["source"],
                    filename=data["filename"],
                    mode=data["mode"],
                )
            except ValidationError as exc:  # rate limit, ban, and the service's own checks
                form.add_error(None, exc)
            else:
                return redirect("submission_detail", pk=submission.pk)
        # bad input is the client's to fix: 400, or 429 when the limits refuse it
        status = 429 if _rate_limited(form) else 400
        return render(request, "web/upload.html", _context(form, request.user), status=status)
    form = UploadForm(initial={"task": request.GET.get("task")})
    return render(request, "web/upload.html", _context(form, request.user))


def too_large_form(request):
    """The form again, after Django refused a body too large to read (templates/errors/)."""
    limit = settings.SUBMISSION_MAX_BYTES
    refusal = (f"What you sent is larger than the site reads ({settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes), "
               f"so nothing was kept: a submission may be at most {limit:,} bytes (256 KiB).")
    return render(request, "web/upload.html", {**_context(UploadForm(), request.user), "refusal": refusal},
                  status=413)


def _context(form, user) -> dict:
    device_type = routing.default_device_type()
    # how many more uploads the hourly limit takes, for a logged-in user (services.upload_allowance)
    allowance = services.upload_allowance(user=user) if user.is_authenticated else None
    return {"form": form, "device_name": device_label(device_type), "tryout": is_tryout(device_type),
            "competitions": open_for_upload(device_type=device_type), "allowance": allowance}


def _rate_limited(form) -> bool:
    return any(
        getattr(e, "code", "") in ("rate_limited", "queue_full")
        for e in form.errors.as_data().get("__all__", [])
    )
