"""A site's finished evaluations carried to another site (manage.py export_results, then
import_results): the boards read the same there, users come without a way to log in, and loading
the file twice changes nothing."""
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from leaderboard import selectors
from leaderboard.models import Submission
from leaderboard.services import results_file
from site_helpers import H200, make_done, make_queued

pytestmark = pytest.mark.django_db


def test_the_boards_of_an_exported_site_read_the_same_after_an_import(task, owner, other, tmp_path):
    make_done(task, owner, speedup=1.31)
    make_done(task, other, speedup=1.07, codes=("extra_threads",), verdict="flagged")
    make_queued(task, owner)  # not finished: it does not travel
    task.calibration = {H200: {"reference_vs_eager": 1.0, "compile_vs_compile": 0.99, "ok": True}}
    task.save()
    path = tmp_path / "rows.json"
    call_command("export_results", "--out", str(path), "--device-type", H200)
    data = json.loads(path.read_text())
    assert len(data["submissions"]) == 2 and data["calibration"]["softmax"][H200]["compile_vs_compile"] == 0.99
    board = [(s.user.username, s.speedup_vs_compile) for s in selectors.leaderboard_for_task(task=task, device_type=H200)]

    # another site: the same tasks, no users, no submissions
    Submission.objects.all().delete()
    get_user_model().objects.all().delete()
    task.calibration = {}
    task.save()
    call_command("import_results", str(path))
    again = [(s.user.username, s.speedup_vs_compile) for s in selectors.leaderboard_for_task(task=task, device_type=H200)]
    assert again == board == [("owner", 1.31)]
    flagged = Submission.objects.get(user__username="other")
    assert flagged.verdict == "flagged" and flagged.reason_codes == ["extra_threads"] and flagged.report
    assert not get_user_model().objects.get(username="owner").has_usable_password()
    task.refresh_from_db()
    assert task.calibration[H200]["ok"] is True

    call_command("import_results", str(path))
    assert Submission.objects.count() == 2


def test_a_file_that_is_not_a_results_file_is_refused(tmp_path, task):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": 99}))
    with pytest.raises(CommandError, match="not a results file"):
        call_command("import_results", str(bad))
    with pytest.raises(results_file.ResultsFileError, match="unknown task"):
        results_file.load({"schema": 1, "submissions": [{"task": "nope", "user": "x"}]})
