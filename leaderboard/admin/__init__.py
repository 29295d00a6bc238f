"""The Django admin: the flagged-submission review queue, audited decisions, bans, tokens.

Every decision goes through a service, which writes an AuditEntry (who, when, why). Actions ask
for the reason on an intermediate page before they apply.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import ValidationError
from django.db import connection
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html

from evaluator import state_word, verdict_word
from leaderboard import selectors, services
from leaderboard.admin import competitions  # noqa: F401  (registers the competition pages)
from leaderboard.models import ApiToken, AuditEntry, FlaggedSubmission, Profile, Submission, Task
from leaderboard.services import opencode
from leaderboard.templatetags import numbers
from leaderboard.web.present import device_label



# the admin's lists fit a 1280 px screen (tests/browser/test_browser_words.py): the app list that
# Django puts beside every page is left out (the index and the breadcrumbs lead to every model),
# and a long user name is cut to this many characters
admin.site.enable_nav_sidebar = False
USER_CHARS = 16


def _reason_codes() -> list[str]:
    from evaluator import CODES

    return [*CODES, "disqualified"]


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 60}), required=False)

    def __init__(self, *args, reason_required: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = reason_required


def _with_reason(modeladmin, request, queryset, *, title: str, reason_required: bool, apply):
    """Ask for the reason on an intermediate page; when it comes back, apply to each object."""
    if "apply" in request.POST:
        form = ReasonForm(request.POST, reason_required=reason_required)
        if form.is_valid():
            done, refused = 0, []
            for obj in queryset:
                try:
                    apply(obj, form.cleaned_data["reason"])
                    done += 1
                except ValidationError as exc:
                    refused.append(f"{obj}: {' '.join(exc.messages)}")
            if done:
                modeladmin.message_user(request, f"{title}: {done} done.", messages.SUCCESS)
            for line in refused:
                modeladmin.message_user(request, f"{title} refused for {line}", messages.WARNING)
            return None
    else:
        form = ReasonForm(reason_required=reason_required)
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "objects": list(queryset),
        "form": form,
        "action": request.POST.get("action", ""),
        "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across", "0"),
        "reason_required": reason_required,
        "opts": modeladmin.model._meta,
    }
    return TemplateResponse(request, "admin/leaderboard/action_reason.html", context)


def _reason_action(service, target: str, *, title: str, reason_required: bool, description: str):
    """An admin action that asks for the reason, then calls `service(<target>=obj, actor=...,
    reason=...)` on each selected object."""
    @admin.action(description=description, permissions=["change"])
    def action(modeladmin, request, queryset):
        return _with_reason(modeladmin, request, queryset, title=title, reason_required=reason_required,
                            apply=lambda obj, reason: service(**{target: obj}, actor=request.user, reason=reason))

    return action


class ReasonCodeFilter(admin.SimpleListFilter):
    title = "reason"
    parameter_name = "reason"

    def lookups(self, request, model_admin):
        return [(code, code) for code in _reason_codes()]

    def queryset(self, request, queryset):
        code = self.value()
        if not code:
            return queryset
        if connection.features.supports_json_field_contains:
            return queryset.filter(reason_codes__contains=[code])
        return queryset.filter(reason_codes__icontains=f'"{code}"')


class ResultFilter(admin.SimpleListFilter):
    """The verdict in the site's words, a disqualification as its own state (rejected and hidden)."""
    title = "result"
    parameter_name = "result"

    def lookups(self, request, model_admin):
        return [(v, verdict_word(v)) for v in ("verified", "flagged", "rejected")] + [
            ("disqualified", verdict_word("rejected", hidden=True))]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "disqualified":
            return queryset.filter(hidden=True)
        if value in ("verified", "flagged", "rejected"):
            return queryset.filter(verdict=value, hidden=False)
        return queryset


class AuditInline(admin.TabularInline):
    model = AuditEntry
    fk_name = "submission"
    fields = ("created_at", "action", "actor", "reason")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class SubmissionAdminBase(admin.ModelAdmin):
    # one column per question, in the site's words: the status, verdict and hidden flags read as one
    # result ("Verified (test run)", "Disqualified"), so that the list fits a 1280 px screen
    list_display = ("id", "task", "user_name", "mode_value", "device", "result", "speedup", "reason_list", "uploaded")
    list_select_related = ("task", "user")
    search_fields = ("=id", "user__username", "source_sha256")
    date_hierarchy = "created_at"
    inlines = [AuditInline]
    actions = ["approve", "disqualify", "rerun", "withhold", "release"]
    exclude = ("source", "report", "logs")
    readonly_fields = [f.name for f in Submission._meta.fields if f.name not in ("source", "report", "logs")] + [
        "source_code", "report_json", "log_text"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # disqualify hides; nothing is deleted

    @admin.display(description="user", ordering="user__username")
    def user_name(self, obj):
        # a user name is one unbreakable word of up to 150 characters: cut, the whole in the title
        name = obj.user.get_username()
        if len(name) <= USER_CHARS:
            return name
        return format_html('<span title="{}">{}…</span>', name, name[:USER_CHARS - 1])

    @admin.display(description="uploaded", ordering="created_at")
    def uploaded(self, obj):
        return timezone.localtime(obj.created_at).strftime("%Y-%m-%d %H:%M")

    @admin.display(description="mode", ordering="mode")
    def mode_value(self, obj):
        return obj.mode

    @admin.display(description="device", ordering="device_type")
    def device(self, obj):
        return device_label(obj.device_type)

    @admin.display(description="result")
    def result(self, obj):
        return state_word(status=obj.status, verdict=obj.verdict, mode=obj.mode, hidden=obj.hidden)

    @admin.display(description="speedup", ordering="speedup_vs_compile")
    def speedup(self, obj):
        # three significant digits, as on the site: a CPU try-out's 0.00134x is not "0.00x"
        return numbers.speedup(obj.speedup_vs_compile)

    @admin.display(description="% of floor", ordering="pct_of_floor")
    def floor_share(self, obj):
        return numbers.pct(obj.pct_of_floor, 3)

    @admin.display(description="reasons")
    def reason_list(self, obj):
        return ", ".join(obj.reason_codes or []) or numbers.DASH  # the dash of an empty speedup beside it

    @admin.display(description="source")
    def source_code(self, obj):
        return format_html("<pre style='max-height:40em;overflow:auto'>{}</pre>", obj.source)

    @admin.display(description="report")
    def report_json(self, obj):
        import json

        return format_html("<pre style='max-height:40em;overflow:auto'>{}</pre>", json.dumps(obj.report, indent=2))

    @admin.display(description="logs")
    def log_text(self, obj):
        return format_html("<pre style='max-height:30em;overflow:auto'>{}</pre>", obj.logs)

    approve = _reason_action(services.submission_approve, "submission", title="Approve", reason_required=False,
                             description="Approve (becomes verified and ranks)")
    disqualify = _reason_action(services.submission_disqualify, "submission", title="Disqualify",
                                reason_required=True, description="Disqualify (rejected with a reason, hidden)")
    rerun = _reason_action(services.submission_rerun, "submission", title="Re-run", reason_required=False,
                           description="Re-run (evaluate again)")

    @admin.action(description="Withhold the code from visitors", permissions=["change"])
    def withhold(self, request, queryset):
        return _with_reason(self, request, queryset, title="Withhold", reason_required=True,
                            apply=lambda s, r: opencode.submission_withhold(submission=s, actor=request.user, reason=r))

    @admin.action(description="Release withheld code", permissions=["change"])
    def release(self, request, queryset):
        return _with_reason(self, request, queryset, title="Release", reason_required=False,
                            apply=lambda s, r: opencode.submission_release(submission=s, actor=request.user, reason=r))


@admin.register(Submission)
class SubmissionAdmin(SubmissionAdminBase):
    list_filter = ("task", "status", ResultFilter, "mode", "device_type", ReasonCodeFilter, "created_at")


@admin.register(FlaggedSubmission)
class FlaggedSubmissionAdmin(SubmissionAdminBase):
    list_display = ("id", "task", "user_name", "device", "speedup", "floor_share", "reason_list", "uploaded")
    list_filter = ("task", ReasonCodeFilter, "device_type", "created_at")

    def get_queryset(self, request):
        return selectors.flagged_queue()


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("name", "title", "bound", "max_speedup_vs_compile", "updated_at")
    readonly_fields = ("updated_at",)


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "action", "actor", "submission", "target_user", "reason")
    list_filter = ("action", "created_at")
    search_fields = ("actor__username", "target_user__username", "reason")
    readonly_fields = ("created_at", "action", "actor", "submission", "target_user", "reason")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at")
    search_fields = ("user__username", "prefix")
    readonly_fields = ("prefix", "user", "name", "created_at", "last_used_at")

    def has_add_permission(self, request):
        return False  # the key is shown once: create tokens from the profile page or the command


class ProfileInline(admin.StackedInline):
    model = Profile
    fields = ("banned", "banned_reason", "banned_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False  # bans go through the audited action


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class LeaderboardUserAdmin(UserAdmin):
    inlines = [ProfileInline]
    list_display = ("username", "email", "is_staff", "is_banned", "date_joined")
    list_filter = (*UserAdmin.list_filter, "profile__banned")
    actions = ["ban", "unban"]

    @admin.display(boolean=True, description="banned", ordering="profile__banned")
    def is_banned(self, obj):
        profile = getattr(obj, "profile", None)
        return bool(profile and profile.banned)

    ban = _reason_action(services.user_ban, "user", title="Ban", reason_required=True,
                         description="Ban (hide all their entries from leaderboards)")
    unban = _reason_action(services.user_unban, "user", title="Unban", reason_required=False, description="Unban")
