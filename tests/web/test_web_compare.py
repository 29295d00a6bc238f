"""Comparing two submissions: only ones the viewer may see, per-shape times, verdicts and reports
side by side, and an escaped diff when both codes are open to the viewer."""
from __future__ import annotations

import difflib
import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from leaderboard import services
from web_helpers import H200, make_done, upload_done

# two valid uploads under the 256 KiB limit with 52,000 short lines of a few hundred distinct
# values: difflib alone takes minutes on this pair
HEAD = "import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, -1)\n"
HUGE_A = HEAD + "".join(f"a{i % 150}\n" for i in range(52_000))
HUGE_B = HEAD + "".join(f"a{i % 149}\n" for i in range(52_000))
HOSTILE = "import torch\n\ndef custom_kernel(x):\n    # </pre><script>alert(1)</script>\n    return torch.softmax(x, -1)\n"


def compare(client, a, b):
    return client.get(reverse("compare"), {"a": a, "b": b})


def test_own_and_public_side_by_side_with_times_verdicts_and_a_diff(client, task, owner, other):
    mine = upload_done(task, owner, source=HOSTILE, mode="test")
    theirs = make_done(task, other, speedup=1.25)  # ranked on the H200 board: public
    client.force_login(owner)
    r = compare(client, mine.pk, theirs.pk)
    assert r.status_code == 200
    html = r.content.decode()
    assert f"A: <a href=\"/submissions/{mine.pk}/\">#{mine.pk}</a> by owner" in html
    assert f"B: <a href=\"/submissions/{theirs.pk}/\">#{theirs.pk}</a> by other" in html
    assert "Verified (test run)" in html and ">Verified<" in html
    assert 'id="different-devices"' in html  # a CPU test run against an H200 result
    # the diff needs both codes open: the other's is not published
    assert 'id="diff-private"' in html and f"the code of #{theirs.pk} is not open to you" in html
    services.submission_publish(submission=theirs, actor=other)
    html = compare(client, mine.pk, theirs.pk).content.decode()
    diff = re.search(r'<pre class="diff" id="diff">.*?</pre>', html, re.S).group(0)
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in diff and "<script>alert" not in html
    assert f"--- #{mine.pk}" in diff and f"+++ #{theirs.pk}" in diff
    assert '<span class="del">-    # &lt;/pre&gt;' in diff


def test_per_shape_times_and_their_ratio_on_one_device(client, task, owner, other):
    a = make_done(task, owner, speedup=1.0)
    b = make_done(task, other, speedup=1.5)
    html = compare(client, a.pk, b.pk).content.decode()  # anonymous: both are public entries
    row = re.search(r'<table id="compare-shapes">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert cells[:3] == ["0.150 ms", "0.150 ms", "1.00"]
    assert cells[3:5] == ["1.00x", "1.50x"]
    assert 'id="different-devices"' not in html
    assert 'id="diff-private"' in html  # ranked, but neither code is open to a visitor
    services.submission_publish(submission=a, actor=owner)
    services.submission_publish(submission=b, actor=other)
    assert "The two have the same code." in compare(client, a.pk, b.pk).content.decode()


def test_what_the_viewer_may_not_see_is_refused_with_a_message(client, task, owner, other):
    mine = make_done(task, owner, speedup=1.2)
    private = upload_done(task, other, mode="test")  # another user's test run
    client.force_login(owner)
    r = compare(client, mine.pk, private.pk)
    assert r.status_code == 400
    assert f"There is no submission #{private.pk} you may see" in r.content.decode()
    assert "custom_kernel" not in r.content.decode()
    r = compare(client, mine.pk, 10**9)
    assert r.status_code == 400 and "There is no submission #1000000000" in r.content.decode()


@pytest.mark.parametrize("a, b", [("x", "1"), ("1", ""), ("-3", "1"), ("1", str(10**30)), ("1.5", "2"), ("\x00", "1")])
def test_bad_numbers_get_a_clear_400(client, task, owner, a, b):
    make_done(task, owner)
    r = compare(client, a, b)
    assert r.status_code == 400
    assert "Give a submission&#x27;s number, e.g. 12." in r.content.decode()


def test_the_empty_form_offers_ones_own_submissions_and_the_result_page_links_to_it(client, task, owner):
    mine = make_done(task, owner, device_type=H200)
    client.force_login(owner)
    html = client.get(reverse("compare")).content.decode()
    assert 'id="compare-form"' in html and f"#{mine.pk} · softmax" in html
    page = client.get(reverse("submission_detail", args=[mine.pk])).content.decode()
    assert f'href="/compare/?a={mine.pk}"' in page
    r = client.get(reverse("compare"), {"a": mine.pk})
    assert r.status_code == 200
    assert f'name="a" id="id_a" min="1" value="{mine.pk}"' in r.content.decode()
    assert 'name="b" id="id_b" min="1" value=""' in r.content.decode()


@pytest.fixture
def matcher_runs(monkeypatch):
    """How many times difflib's matcher starts: the real one, counted."""
    runs = []

    class Counted(difflib.SequenceMatcher):
        def __init__(self, *args, **kwargs):
            runs.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(difflib, "SequenceMatcher", Counted)
    return runs


@pytest.mark.timeout(120)
def test_a_pair_too_large_to_diff_gets_a_note_and_its_numbers_without_difflib(client, task, owner, other,
                                                                              matcher_runs):
    a = services.submission_publish(submission=upload_done(task, owner, source=HUGE_A, speedup=1.0), actor=owner)
    b = services.submission_publish(submission=upload_done(task, other, source=HUGE_B, speedup=1.5), actor=other)
    lines = len(HUGE_A.splitlines())
    assert lines > 52_000 and max(len(HUGE_A.encode()), len(HUGE_B.encode())) < 256 * 1024
    r = compare(client, a.pk, b.pk)  # anonymous: both codes are published
    assert r.status_code == 200
    html = r.content.decode()
    note = re.search(r'<p class="panel" id="diff-too-large">.*?</p>', html, re.S).group(0)
    assert f"Too large to diff here: #{a.pk} has {lines} lines and #{b.pk} {lines}" in note
    assert "4,000 lines a side" in note and 'id="diff"' not in html
    assert matcher_runs == []  # refused on size, before difflib ran
    row = re.search(r'<table id="compare-shapes">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    assert re.findall(r'<td class="num">([^<]*)</td>', row)[3:5] == ["1.00x", "1.50x"]  # the numbers stay


def test_a_diff_is_made_once_per_pair_and_stays_escaped(client, task, owner, other, matcher_runs):
    cache.clear()
    a = services.submission_publish(submission=upload_done(task, owner, source=HOSTILE), actor=owner)
    b = services.submission_publish(submission=upload_done(task, other), actor=other)
    first = compare(client, a.pk, b.pk).content.decode()
    runs = len(matcher_runs)
    assert runs >= 1
    again = compare(client, a.pk, b.pk).content.decode()
    assert len(matcher_runs) == runs  # the second answer came from the cache
    diff = re.search(r'<pre class="diff" id="diff">.*?</pre>', again, re.S).group(0)
    assert diff in first and "&lt;/pre&gt;&lt;script&gt;" in diff and "<script>alert" not in again
    compare(client, b.pk, a.pk)  # the other way round is another diff
    assert len(matcher_runs) > runs
