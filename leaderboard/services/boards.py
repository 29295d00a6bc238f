"""The boards' read model (models.BoardEntry) kept in step with the submissions. Every write that
can change who stands on a board, or with which result, refreshes the entries it touches inside
its own transaction: a stored result, an approval, a disqualification, a re-run, a ban or an
unban, a rescore under a new calibration, an imported results file. Publishing or withholding
code, retiring a task and freezing a competition change what a row shows, not which rows there
are: the board reads those fields from the submission itself (selectors.leaderboard_for_task).

A refresh recomputes one user's best on one task and device type from that user's ranked rows
(the sub_ranked index), under a lock on the user's row: two results of one user stored at once
are refreshed one after the other, the second seeing the first. `boards_rebuild` (and
`manage.py rebuild_boards`) builds the whole model from the submissions; `board_entries_built`
says what that would hold, which the tests compare with the kept rows after each kind of write."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from leaderboard.models import BoardEntry


def _ranked():
    from leaderboard import selectors  # selectors import services.opencode: not at import time

    return selectors.ranked_submissions(), selectors.BEST_FIRST


def board_entries_refresh(*, task_id: int, user_id: int, device_types) -> None:
    """The user's entry on each of these boards of the task, recomputed from their rows."""
    ranked, best_first = _ranked()
    with transaction.atomic():
        list(get_user_model().objects.select_for_update().filter(pk=user_id).values_list("pk", flat=True))
        for device_type in sorted(set(device_types)):
            best = (ranked.filter(task_id=task_id, device_type=device_type, user_id=user_id)
                    .order_by(*best_first).values_list("pk", flat=True).first())
            if best is None:
                BoardEntry.objects.filter(task_id=task_id, device_type=device_type, user_id=user_id).delete()
            else:
                BoardEntry.objects.update_or_create(task_id=task_id, device_type=device_type, user_id=user_id,
                                                    defaults={"submission_id": best})


def board_entries_refresh_user(*, user_id: int) -> None:
    """Every entry of the user (a ban takes them off every board, an unban puts them back)."""
    from leaderboard.models import Submission

    boards = set(Submission.objects.filter(user_id=user_id, mode=Submission.Mode.RANKED)
                 .order_by().values_list("task_id", "device_type").distinct())
    boards |= set(BoardEntry.objects.filter(user_id=user_id).values_list("task_id", "device_type"))
    for task_id in sorted({t for t, _ in boards}):
        board_entries_refresh(task_id=task_id, user_id=user_id,
                              device_types=[d for t, d in boards if t == task_id])


def board_entries_built(*, task_id: int | None = None, device_type: str | None = None) -> set[tuple]:
    """{(task id, device type, user id, submission id)}: the entries a rebuild from the
    submissions holds (of one task, and one device type of it, when given)."""
    ranked, best_first = _ranked()
    if task_id is not None:
        ranked = ranked.filter(task_id=task_id)
    if device_type is not None:
        ranked = ranked.filter(device_type=device_type)
    rows = (ranked.annotate(row=Window(RowNumber(), partition_by=[F("task_id"), F("device_type"), F("user_id")],
                                       order_by=best_first))
            .filter(row=1).values_list("task_id", "device_type", "user_id", "pk"))
    return set(rows)


def board_entries_kept(*, task_id: int | None = None, device_type: str | None = None) -> set[tuple]:
    """The same tuples as board_entries_built, of the rows kept."""
    kept = BoardEntry.objects.all()
    if task_id is not None:
        kept = kept.filter(task_id=task_id)
    if device_type is not None:
        kept = kept.filter(device_type=device_type)
    return set(kept.values_list("task_id", "device_type", "user_id", "submission_id"))


@transaction.atomic
def boards_rebuild(*, task_id: int | None = None, device_type: str | None = None) -> int:
    """The entries (of one task, one device type of it, when given) built anew from the
    submissions: a rescore moves many at once, and a new site or an import starts here. Returns
    how many there are."""
    built = board_entries_built(task_id=task_id, device_type=device_type)
    kept = BoardEntry.objects.all()
    if task_id is not None:
        kept = kept.filter(task_id=task_id)
    if device_type is not None:
        kept = kept.filter(device_type=device_type)
    kept.delete()
    BoardEntry.objects.bulk_create(
        [BoardEntry(task_id=t, device_type=d, user_id=u, submission_id=s) for t, d, u, s in built], batch_size=2000)
    return len(built)
