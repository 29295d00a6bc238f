"""The boards as a read model: each user's best ranked result on each task and device type, the
rows a board shows. The services keep it in their write transactions
(leaderboard/services/boards.py), so that a board reads its couple of thousand rows instead of
ranking every submission of its task (a window over about 9,000 rows of 100,000 for the softmax
H200 board); `manage.py rebuild_boards` builds it from the submissions."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class BoardEntry(models.Model):
    task = models.ForeignKey("leaderboard.Task", on_delete=models.CASCADE, related_name="+")
    device_type = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # not one-to-one: a re-run moves a submission to another device type, and the two boards are
    # refreshed one after the other in the same transaction
    submission = models.ForeignKey("leaderboard.Submission", on_delete=models.CASCADE, related_name="board_entries")

    class Meta:
        app_label = "leaderboard"
        verbose_name_plural = "board entries"
        constraints = [
            models.UniqueConstraint(fields=["task", "device_type", "user"], name="one_board_entry_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}/{self.device_type}: #{self.submission_id} of user {self.user_id}"
