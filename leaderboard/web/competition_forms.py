"""Forms for competitions (the audit console's and the admin's), withholding code, and comparing
two submissions. They check what a person typed; the services check it again."""
from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from leaderboard import routing, scoring
from leaderboard.models import Competition, Submission, Task
from leaderboard.services import competitions
from leaderboard.web.present import device_label

DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
FROZEN_FIELDS = ("tasks", "device_types", "opens_at", "closes_at")


def known_device_types(extra=()) -> list[str]:
    """Device types a competition may name: those with published ceilings, this site's own, those
    with submissions, and whatever the competition already names (so that the form shows it).
    Never a bare "cuda" found elsewhere: a GPU queued as "cuda" stores its results under
    "cuda:<GPU name>", so a competition on "cuda" would never get standings."""
    found = set(scoring.CEILINGS) | {routing.default_device_type()}
    found |= set(Submission.objects.order_by().values_list("device_type", flat=True).distinct())
    found = {d for d in found if not competitions.device_type_problem(d)} | set(extra or ())
    return sorted(found, key=lambda d: (d == "cpu", d))


BIGGEST_ID = 2**63 - 1  # the largest id a database integer holds


class TaskChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, task):
        return f"{task.title} ({task.name})"

    def _check_values(self, value):
        # a number past the database's integers is no task: PostgreSQL finds no row for it, SQLite
        # raises OverflowError while binding it (a 500), so it is refused here as any unknown task
        for pk in value:
            try:
                number = int(str(pk))
            except ValueError:
                continue  # not a number: Django's own check refuses it
            if not -BIGGEST_ID - 1 <= number <= BIGGEST_ID:
                raise ValidationError(self.error_messages["invalid_choice"], code="invalid_choice",
                                      params={"value": str(pk)[:30]})
        return super()._check_values(value)


class CompetitionForm(forms.ModelForm):
    tasks = TaskChoices(queryset=Task.objects.order_by("name"), widget=forms.CheckboxSelectMultiple,
                        error_messages={"required": "Choose at least one task."})
    device_types = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple, label="Devices",
        error_messages={"required": "Choose at least one device type."},
        help_text="One set of standings per task and device type.")
    # declared here, not in Meta, so that the admin keeps this one-input widget too
    opens_at = forms.DateTimeField(
        label="Opens (UTC)", help_text="Now or later: uploads made before a competition exists never enter it.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}, format=DATETIME_FORMAT))
    closes_at = forms.DateTimeField(
        label="Closes (UTC)", help_text="Uploads from this moment on are after the deadline.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}, format=DATETIME_FORMAT))

    class Meta:
        model = Competition
        fields = ["slug", "title", "text", "tasks", "opens_at", "closes_at"]
        labels = {"slug": "Short name (its address)"}
        help_texts = {"text": "Shown on the competition's page as plain text."}
        widgets = {"text": forms.Textarea(attrs={"rows": 5})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        current = self.instance.device_types or []
        self.fields["device_types"].choices = [(d, device_label(d)) for d in known_device_types(current)]
        if self.instance.pk:
            self.initial.setdefault("device_types", current)
        if self.instance.frozen_at:
            # what decided the frozen standings stays; the title and the text may still change
            for name in FROZEN_FIELDS:
                self.fields[name].disabled = True
                self.fields[name].help_text = "Fixed: the standings are frozen."

    def _post_clean(self):
        super()._post_clean()
        self.instance.device_types = sorted(set(self.cleaned_data.get("device_types") or []))
        try:
            competitions.competition_check(competition=self.instance, tasks=self.cleaned_data.get("tasks") or [])
        except ValidationError as exc:
            if hasattr(exc, "error_dict"):  # all problems at once, each field's own only once
                exc = ValidationError({k: v for k, v in exc.error_dict.items() if k not in self.errors})
            self._update_errors(exc)

    def save_through_service(self, *, actor) -> Competition:
        """What the console and the admin call instead of save(): the service writes."""
        return competitions.competition_save(competition=self.instance, tasks=self.cleaned_data["tasks"],
                                             actor=actor)


class CodeDecisionForm(forms.Form):
    """Staff withhold a submission's code from visitors, or release it again."""

    action = forms.ChoiceField(choices=[("withhold", "Withhold"), ("release", "Release")])
    reason = forms.CharField(max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean(self):
        data = super().clean()
        data["reason"] = (data.get("reason") or "").strip()
        if data.get("action") == "withhold" and not data["reason"]:
            raise forms.ValidationError("Give a reason to withhold the code: it goes into the audit log.")
        return data


_NUMBER = "Give a submission's number, e.g. 12."
_NUMBER_ERRORS = {"invalid": _NUMBER, "min_value": _NUMBER, "max_value": _NUMBER, "required": _NUMBER}


class CompareForm(forms.Form):
    a = forms.IntegerField(min_value=1, max_value=BIGGEST_ID, label="Submission", error_messages=_NUMBER_ERRORS)
    b = forms.IntegerField(min_value=1, max_value=BIGGEST_ID, label="and submission", error_messages=_NUMBER_ERRORS)
