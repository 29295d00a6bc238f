"""Forms of the web pages. They check what a person typed; the services check it again."""
from __future__ import annotations

import re

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm

from evaluator import check_signature, validate_source
from leaderboard.models import Submission, Task
from leaderboard.services.submissions import too_big_message
from leaderboard.web import usernames

PASTED_FILENAME = "submission.py"


class SignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")
        help_texts = {"email": "Optional: only to send you a link when you forget your password."}

    def clean_username(self):
        name = super().clean_username()
        if not name or self.has_error("username"):  # taken already: one message is enough
            return name
        if usernames.mixes_confusable_scripts(name):
            raise forms.ValidationError("This name mixes scripts with letters that pass for each other; "
                                        "write it in one script.", code="confusable")
        other = usernames.lookalike_of(name)
        if other is not None:
            raise forms.ValidationError(f"This name looks like the existing name “{other}” on the boards; "
                                        "choose another.", code="confusable")
        return name


def check_source(source: str) -> list[str]:
    """Problems a person can fix before anything is queued (a syntax error, no custom_kernel, ...):
    the evaluator's own upload check, so the form and the judge agree."""
    return [_sentence(p) for p in validate_source(source)]


def _sentence(message: str) -> str:
    message = message.strip()
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")


def _in_words_of_the_form(message: str, *, pasted: bool) -> str:
    """The evaluator's message as the form shows it: without the Markdown backticks it writes around
    names (a form error is plain text: `custom_kernel` would show its backticks), and about "the
    code" where the code was pasted, not uploaded as a file."""
    message = message.replace("`", "")
    if pasted:
        message = re.sub(r"\b([Tt]he|[Tt]his) file\b", r"\1 code", message)
    return message


class TaskChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, task):
        return f"{task.title} ({task.name})"


class UploadForm(forms.Form):
    # no task is chosen for the user: a file sent to the first task in the list by accident is queued
    # a retired task takes no uploads (the service refuses them too, for the API and the CLI)
    task = TaskChoiceField(queryset=Task.objects.filter(retired=False), to_field_name="name",
                           empty_label="Choose a task")
    # ranked is the default here as in the API, the CLI and manage.py evaluate: one default everywhere
    mode = forms.ChoiceField(
        choices=[(m, Submission.Mode(m).label) for m in ("ranked", "test", "profile")],
        initial=Submission.Mode.RANKED,
        required=False,  # a form sent without a mode is ranked, as an API call without one is
        widget=forms.RadioSelect,
        help_text="ranked (the default, as in the API and the CLI): the full evaluation, timed against "
        "eager PyTorch and torch.compile; a verified result ranks. "
        "test: correctness on the test shapes only, in seconds, never ranked. "
        "profile: the test run's checks, then your kernel on one benchmark shape under a profiler "
        "(Nsight Compute on a GPU, torch.profiler on the CPU); shown only to you, never ranked, "
        "and limited to a few runs an hour.",
    )
    file = forms.FileField(required=False, label="Python file", help_text="A .py file of at most 256 KiB.")
    code = forms.CharField(
        required=False,
        label="or paste the code",
        widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}),
        strip=False,
    )

    def clean_mode(self):
        return self.cleaned_data.get("mode") or Submission.Mode.RANKED

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if not upload:
            return None
        limit = settings.SUBMISSION_MAX_BYTES
        if not upload.name.lower().endswith(".py"):
            raise forms.ValidationError("Upload a Python source file: the name must end in .py.")
        if upload.size > limit:
            raise forms.ValidationError(too_big_message(upload.size))
        raw = upload.read(limit + 1)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text.") from None
        return (upload.name.rsplit("/", 1)[-1][:255], text)

    def clean_code(self):
        code = self.cleaned_data.get("code") or ""
        size = len(code.encode("utf-8"))
        if size > settings.SUBMISSION_MAX_BYTES:
            raise forms.ValidationError(too_big_message(size, "code"))
        return code

    def clean(self):
        data = super().clean()
        uploaded = data.get("file")
        code = data.get("code") or ""
        if self.errors:
            return data
        if uploaded and code.strip():
            raise forms.ValidationError("Give either a file or pasted code, not both.")
        if uploaded:
            filename, source = uploaded
        elif code.strip():
            filename, source = PASTED_FILENAME, code
        else:
            raise forms.ValidationError("Choose a .py file or paste your code.")
        if "\x00" in source:
            raise forms.ValidationError("The source contains NUL bytes.")
        problems = check_source(source)
        task = data.get("task")
        if not problems and task is not None:  # the service checks it again, for the API and the CLI
            problems = [p + "." for p in check_signature(source, task.input_names, task.name)]
        for problem in problems:
            self.add_error("file" if uploaded else "code", _in_words_of_the_form(problem, pasted=not uploaded))
        data["filename"] = filename
        data["source"] = source
        return data


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="To tell your tokens apart.")


class AuditDecisionForm(forms.Form):
    """An auditor's decision on one submission; every decision carries its reason."""

    action = forms.ChoiceField(choices=[("approve", "Approve"), ("disqualify", "Disqualify"), ("rerun", "Re-run")])
    reason = forms.CharField(
        max_length=2000, widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Give a reason: it goes into the audit log."},
    )

    def clean_reason(self):
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("Give a reason: it goes into the audit log.")
        return reason


class TaskFileForm(forms.Form):
    """One task file for the audit console: a KernelBench-style problem (.py). Only its text is
    kept here; the worker reads it in a box."""

    file = forms.FileField(label="Task file", help_text="A KernelBench-style problem: Model, get_inputs, "
                                                        "get_init_inputs (a .py file of at most 1 MiB).")
    track = forms.CharField(max_length=64, initial="added", help_text=(
        'The track it joins: "added", or "kernelbench-level1" and the like for a level\'s problem '
        "(the page groups tasks by track)."))

    MAX_BYTES = 1024 * 1024

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if not upload.name.lower().endswith(".py"):
            raise forms.ValidationError("A task file is a .py file.")
        if upload.size > self.MAX_BYTES:
            raise forms.ValidationError(f"A task file is at most {self.MAX_BYTES:,} bytes.")
        try:
            text = upload.read(self.MAX_BYTES + 1).decode("utf-8")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text.") from None
        if "\x00" in text:
            raise forms.ValidationError("The file contains NUL bytes.")
        return (upload.name.rsplit("/", 1)[-1], text)

    def clean_track(self):
        return self.cleaned_data["track"].strip().lower()
