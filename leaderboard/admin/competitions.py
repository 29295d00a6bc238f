"""The Django admin's competition pages: the same form and service as the audit console's, and
the frozen standings read-only. Imported by leaderboard/admin/__init__.py."""
from __future__ import annotations

from django.contrib import admin

from leaderboard.models import Competition, CompetitionEntry
from leaderboard.web.competition_forms import CompetitionForm


class EntryInline(admin.TabularInline):
    model = CompetitionEntry
    fields = ("task", "device_type", "rank", "user", "submission", "speedup_vs_compile", "speedup_vs_eager")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "frozen standings (a disqualified submission's entry drops out)"

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Competition)
class CompetitionAdmin(admin.ModelAdmin):
    form = CompetitionForm
    list_display = ("slug", "title", "opens_at", "closes_at", "frozen_at")
    search_fields = ("slug", "title")
    readonly_fields = ("frozen_at", "created_by", "created_at")
    inlines = [EntryInline]

    def get_fields(self, request, obj=None):
        return ["slug", "title", "text", "tasks", "device_types", "opens_at", "closes_at", *self.readonly_fields]

    def save_model(self, request, obj, form, change):
        form.save_through_service(actor=request.user)

    def save_related(self, request, form, formsets, change):
        # the service has set the tasks; the inline is read-only
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def has_delete_permission(self, request, obj=None):
        # frozen standings are a record; an upcoming competition may go
        return obj is None or obj.frozen_at is None and obj.entries.count() == 0
