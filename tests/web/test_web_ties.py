"""Ties with torch.compile on the pages: a tie reads "tie with torch.compile" and gets no "faster"
badge on the board, the result page, the compare page and the home page; the board ranks it at
1.00; the task page gives the tie band of each device type it has results or a calibration on."""
import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from leaderboard import services
from web_helpers import H200, make_done


@pytest.fixture
def people(db):
    return [get_user_model().objects.create_user(f"user{i}", password="pw-tie-12345") for i in range(3)]


def board_rows(html: str) -> list[str]:
    body = re.search(r'<table id="leaderboard">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return re.findall(r"<tr>(.*?)</tr>", body, re.S)


def marks(html: str) -> list[str]:
    return re.findall(r'data-vs-compile="(\w+)"', html)


def test_the_board_says_tie_ranks_it_at_one_and_badges_only_a_win(client, task, people):
    tie = make_done(task, people[0], speedup=1.004)
    loss = make_done(task, people[1], speedup=0.9)
    win = make_done(task, people[2], speedup=1.2)
    html = client.get(reverse("task_detail", args=[task.name]), {"device": H200}).content.decode()
    rows = board_rows(html)
    assert [re.search(r"/submissions/(\d+)/", r).group(1) for r in rows] == [str(s.pk) for s in (win, tie, loss)]
    assert marks(rows[0]) == ["faster"] and 'class="vs-compile badge faster"' in rows[0]
    assert marks(rows[1]) == ["tie"] and "tie with torch.compile" in rows[1] and "badge" not in rows[1]
    assert "1.00x" in rows[1]  # its own speedup, three digits: 1.004 -> 1.00x
    assert marks(rows[2]) == ["slower"] and "badge" not in rows[2]
    assert 'id="board-ties-link"' in html


def test_the_result_page_says_tie_and_that_it_ranks_at_one(client, task, people):
    tie = make_done(task, people[0], speedup=1.004)
    html = client.get(reverse("submission_detail", args=[tie.pk])).content.decode()
    assert marks(html) == ["tie"] and "badge faster" not in html
    found = re.search(r'<dd id="vs-compile">(.*?)</dd>', html, re.S).group(1)
    assert found.startswith("a tie: between 0.974x and 1.03x") and "it ranks at 1.00x" in found
    assert "a tie with torch.compile" in html and "it ranks as a tie at 1.00x" in html
    win = make_done(task, people[1], speedup=1.2)
    html = client.get(reverse("submission_detail", args=[win.pk])).content.decode()
    found = re.search(r'<dd id="vs-compile">(.*?)</dd>', html, re.S).group(1)
    assert marks(html) == ["faster"] and found.startswith("faster: between 1.17x and 1.23x") and "ranks at" not in found


def test_compare_and_home_say_tie(client, task, people):
    tie = make_done(task, people[0], speedup=1.004)
    assert "tie with torch.compile" in client.get(reverse("home")).content.decode()  # the best is a tie
    win = make_done(task, people[1], speedup=1.2)
    assert "tie with torch.compile" not in client.get(reverse("home")).content.decode()  # now a win
    html = client.get(reverse("compare"), {"a": tie.pk, "b": win.pk}).content.decode()
    assert marks(html) == ["tie", "faster"]


def test_the_task_page_gives_the_band_on_each_device(client, task, people):
    make_done(task, people[0], speedup=1.004)
    make_done(task, people[1], device_type="cpu", speedup=1.1)
    services.task_record_calibration(rows=[{"task": task.name, "reference_vs_eager": 1.0,
                                            "compile_vs_compile": 0.988, "errors": []}],
                                     device_type=H200, source="test")
    html = client.get(reverse("task_detail", args=[task.name]), {"device": H200}).content.decode()
    bands = re.search(r'<table id="tie-bands">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    rows = {re.sub(r"<[^>]+>", "", r.split("</td>")[0]).strip(): r for r in re.findall(r"<tr.*?</tr>", bands, re.S)}
    assert set(rows) == {"NVIDIA H200", "CPU"}, rows.keys()
    assert "1.00 ± 0.012" in rows["NVIDIA H200"] and "against itself read 0.988x" in rows["NVIDIA H200"]
    assert "1.00 ± 0.150" in rows["CPU"] and "the device's bound" in rows["CPU"]
