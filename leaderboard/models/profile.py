"""Profile mode's stored file: Nsight Compute's .ncu-rep of a profile-mode submission.

The file came out of the submission's own process (evaluator/judge/profile.py): the site never opens
it, it only hands it back to the submission's owner and staff (leaderboard/web/profile_view.py).
"""
from __future__ import annotations

from django.db import models


class ProfileFile(models.Model):
    submission = models.OneToOneField("leaderboard.Submission", on_delete=models.CASCADE,
                                      related_name="profile_file")
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "leaderboard"

    def __str__(self) -> str:
        return f"profile file of #{self.submission_id} ({self.size} bytes)"
