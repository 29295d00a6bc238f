from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from leaderboard import selectors, services
from leaderboard.models import ApiToken
from leaderboard.web.forms import ApiTokenForm, SignupForm
from leaderboard.web.present import badge, device_label
from leaderboard.web.throttle import throttled

SUBMISSIONS_PER_PAGE = 50


@throttled("signup")
def signup(request):
    if request.user.is_authenticated:
        return redirect("profile")
    if request.method == "POST":
        form = SignupForm(request.POST)
        if form.is_valid():
            user = form.save()
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome, {user.get_username()}. Pick a task and upload a kernel.")
            return redirect("home")
    else:
        form = SignupForm()
    return render(request, "registration/signup.html", {"form": form})


def _tokens_for(user):
    finder = getattr(selectors, "api_tokens_for_user", None)
    if finder is not None:
        return finder(user=user)
    return ApiToken.objects.filter(user=user).order_by("-created_at")


def _profile_context(request, **extra) -> dict:
    page = Paginator(selectors.submissions_for_user(user=request.user), SUBMISSIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    for s in page.object_list:
        s.device_name = device_label(s.device_type)
        s.badge = badge(s)
    return {"page": page, "tokens": _tokens_for(request.user), "token_form": ApiTokenForm(), **extra}


# the new key waits here between the POST that made it and the page that shows it, once
NEW_KEY = "new_api_key"


@never_cache
@login_required
def profile(request):
    extra = {}
    new = request.session.pop(NEW_KEY, None)
    if new:
        extra = {"new_key": new["key"], "new_token_name": new["name"]}
    return render(request, "web/profile.html", _profile_context(request, **extra))


@never_cache  # the page shows the new key: no browser or proxy may keep a copy (no-store)
@login_required
@require_POST
def token_create(request):
    """Post, redirect, get: a reload of the page that shows the key makes no second token. The
    key rides in the session (kept on the server) to the next page view, which removes it."""
    form = ApiTokenForm(request.POST)
    if not form.is_valid():
        return render(request, "web/profile.html", _profile_context(request, token_form=form), status=200)
    token, key = services.api_token_create(user=request.user, name=form.cleaned_data["name"])
    request.session[NEW_KEY] = {"key": key, "name": token.name}
    return redirect("profile")


@login_required
@require_POST
def token_revoke(request, token_id: int):
    if services.api_token_revoke(user=request.user, token_id=token_id):
        messages.success(request, "Token revoked.")
    return redirect("profile")
