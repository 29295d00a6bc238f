"""What a GPU MODE or KernelBench user looks for on a board: the kernel's absolute time beside
the speedup (the median at the benchmark shape, the geometric mean over shapes when there are
several), and a mark on an entry whose run was noisy, by the result page's own rule."""
from __future__ import annotations

import math
import re

from django.urls import reverse

from leaderboard import scoring, services
from leaderboard.models import Submission
from web_helpers import H200, SOURCE, report_for


def done_with_shapes(task, user, rows: list[dict], *, speedup=1.2) -> Submission:
    """A ranked result whose report has these benchmark rows, stored as the worker stores it
    (claim, then store_result): the board's time and noise mark are stored with it."""
    report = {**report_for(task, speedup=speedup), "shapes": rows}
    sub = Submission.objects.create(user=user, task=task, mode="ranked", device_type=H200, source=SOURCE,
                                    filename="k.py", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report)
    return Submission.objects.get(pk=sub.pk)


def row(ms, band=0.1, shape=None):
    """A benchmark row whose candidate side spreads `band` of its median (p10-p90)."""
    return {"shape": shape or {"M": 1}, "candidate_ms": ms, "eager_ms": 0.3, "compile_ms": 0.2,
            "candidate_p10_ms": ms * (1 - band / 2), "candidate_p90_ms": ms * (1 + band / 2),
            "speedup_vs_compile": 1.3, "speedup_vs_eager": 2.0}


def board_cells(html: str) -> dict[str, list[str]]:
    table = re.search(r'<table id="leaderboard">.*?</table>', html, re.S).group(0)
    head = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
    out = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        out[cells[1]] = dict(zip(head, cells))
    return out


def test_board_time_is_the_geometric_mean_and_noisy_is_the_result_pages_rule():
    assert scoring.board_time([row(0.2)]) == {"median_ms": 0.2, "noisy": False}
    two = scoring.board_time([row(0.1), row(0.4, band=0.3)])
    assert math.isclose(two["median_ms"], 0.2) and two["noisy"] is True
    assert scoring.board_time([]) == {"median_ms": None, "noisy": False}
    assert scoring.board_time(None) == {"median_ms": None, "noisy": False}
    # the same rule as a result page's row
    assert scoring.shape_is_noisy(row(1.0, band=0.3)) and not scoring.shape_is_noisy(row(1.0, band=0.2))


def test_the_task_page_and_the_api_board_show_the_time_and_mark_a_noisy_run(client, task, owner, other):
    quiet = done_with_shapes(task, owner, [row(0.125)], speedup=1.4)
    noisy = done_with_shapes(task, other, [row(0.2, band=0.4)], speedup=1.2)
    assert (quiet.median_ms, quiet.noisy, noisy.median_ms, noisy.noisy) == (0.125, False, 0.2, True)
    html = client.get(reverse("task_detail", args=[task.name]) + "?device=cuda:NVIDIA H200").content.decode()
    cells = board_cells(html)
    assert cells["owner"]["Time"] == "0.125 ms" and cells["other"]["Time"] == "0.200 ms"
    # each a clear win over the GPU's tie band (1.00 ± 0.03): a "faster" badge beside the speedup
    assert cells["owner"]["Speedup over torch.compile"] == "1.40x faster"
    assert cells["other"]["Speedup over torch.compile"] == "1.20x faster noisy"
    # the result page of the same entry says noisy by the same rule
    client.force_login(other)
    assert 'class="noisy"' in client.get(reverse("submission_detail", args=[noisy.pk])).content.decode()
    client.logout()

    entries = client.get(f"/api/tasks/{task.name}/leaderboard?device=cuda:NVIDIA H200").json()["entries"]
    by_user = {e["user"]: e for e in entries}
    assert by_user["owner"]["median_ms"] == 0.125 and by_user["owner"]["noisy"] is False
    assert by_user["other"]["median_ms"] == 0.2 and by_user["other"]["noisy"] is True
    assert quiet.pk == by_user["owner"]["submission"]


def test_several_benchmark_shapes_show_their_geometric_mean(client, task, owner):
    done_with_shapes(task, owner, [row(0.1, shape={"M": 1}), row(0.4, shape={"M": 2})])
    html = client.get(reverse("task_detail", args=[task.name]) + "?device=cuda:NVIDIA H200").content.decode()
    assert board_cells(html)["owner"]["Time"] == "0.200 ms"
    entry = client.get(f"/api/tasks/{task.name}/leaderboard?device=cuda:NVIDIA H200").json()["entries"][0]
    assert math.isclose(entry["median_ms"], 0.2)


def test_a_result_loaded_from_a_results_file_and_a_rerun_keep_the_board_time_right(task, owner, staff):
    from leaderboard.services import results_file

    sub = done_with_shapes(task, owner, [row(0.3, band=0.5)])
    data = results_file.export()
    Submission.objects.all().delete()
    for entry in data["submissions"]:
        entry.pop("median_ms", None), entry.pop("noisy", None)  # a file written before these fields
    assert results_file.load(data)["created"] == 1
    loaded = Submission.objects.get()
    assert (loaded.median_ms, loaded.noisy) == (0.3, True)
    services.submission_rerun(submission=loaded, actor=staff, reason="again")
    loaded.refresh_from_db()
    assert (loaded.median_ms, loaded.noisy) == (None, False)
    assert sub.pk != loaded.pk
