"""A submission that waits or runs: its page says its place in line in its queue (the fair order
workers claim in) and how long a run of its task usually takes on its device; running, the time so
far against that."""
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils import timezone

from leaderboard import services
from leaderboard.models import Submission
from leaderboard.selectors import queue as queue_reads
from leaderboard.services.submissions import QUEUED_PHASE
from web_helpers import SOURCE

CPU = "cpu"


def queued(task, user, *, minutes_ago, device_type=CPU):
    sub = Submission.objects.create(user=user, task=task, mode="ranked", device_type=device_type, source=SOURCE,
                                    status="queued", phase=QUEUED_PHASE, celery_task_id="t",
                                    enqueued_at=timezone.now() - timedelta(minutes=minutes_ago))
    Submission.objects.filter(pk=sub.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    return Submission.objects.get(pk=sub.pk)


def finished(task, user, *, seconds, verdict="verified", mode="ranked", device_type=CPU):
    """A run that took `seconds` from its claim to its result."""
    end = timezone.now() - timedelta(hours=1)
    return Submission.objects.create(user=user, task=task, mode=mode, device_type=device_type, source=SOURCE,
                                     status="done", verdict=verdict, celery_task_id="t",
                                     started_at=end - timedelta(seconds=seconds), finished_at=end)


def users(*names):
    return [get_user_model().objects.create_user(n, password="pw-long-enough-1") for n in names]


@pytest.fixture
def line(task, owner):
    """Three queued rows ahead of the owner's in fair order, and one behind it though uploaded first."""
    ann, ben, cat, dan = users("ann", "ben", "cat", "dan")
    ran = finished(task, dan, seconds=5, verdict="rejected")  # rejected: not a typical run
    Submission.objects.filter(pk=ran.pk).update(started_at=timezone.now() - timedelta(seconds=10))
    behind = queued(task, dan, minutes_ago=9)  # dan's last evaluation started just now: his turn comes last
    for u, ago in ((ann, 8), (ben, 7), (cat, 6)):
        queued(task, u, minutes_ago=ago)
    queued(task, owner, minutes_ago=4, device_type="cuda:NVIDIA H200")  # another queue: not counted
    mine = queued(task, owner, minutes_ago=3)
    return mine, behind


def test_a_queued_submission_says_its_place_in_line_and_the_typical_duration(client, task, owner, line):
    mine, behind = line
    (eve,) = users("eve")
    for seconds in (30, 40, 100):
        finished(task, eve, seconds=seconds)
    finished(task, eve, seconds=5, verdict="rejected")  # not a typical run
    finished(task, eve, seconds=2, mode="test")  # another mode
    finished(task, eve, seconds=9, device_type="cuda:NVIDIA H200")  # another device
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[mine.pk])).content.decode()
    assert re.search(r'<span id="phase">4th in line</span>', html)
    assert re.search(r'<span class="muted" id="typical">\(ranked runs of this task take about 40 s here\)</span>', html)
    assert re.search(r'<p id="verdict-why">queued, 4th in line</p>', html)
    # the fair order: dan uploaded first, but his last evaluation started most recently
    assert queue_reads.queue_position(submission=behind) == 5
    # a worker claims the first in line: the partial the page polls moves up
    first = services.submission_claim_next(submission_id=mine.pk, worker="w")
    assert first.pk != mine.pk
    partial = client.get(reverse("submission_status", args=[mine.pk])).content.decode()
    assert '<span id="phase">3rd in line</span>' in partial


def test_a_running_submission_shows_its_time_against_the_typical_duration(client, task, owner):
    for seconds in (50, 70, 80):
        finished(task, owner, seconds=seconds)
    sub = queued(task, owner, minutes_ago=1)
    services.submission_claim(submission_id=sub.pk, worker="w")
    Submission.objects.filter(pk=sub.pk).update(started_at=timezone.now() - timedelta(seconds=25),
                                                phase="timing: shape 1 of 1, round 3 (at most 40)")
    client.force_login(owner)
    html = client.get(reverse("submission_status", args=[sub.pk])).content.decode()
    assert '<span id="phase">timing: shape 1 of 1, round 3 (at most 40)</span>' in html
    assert re.search(r'running for 2[56] s</span>\s*<span class="muted" id="typical">\(ranked runs of this task '
                     r'take about 1 min here\)', html)


def test_without_earlier_runs_or_once_finished_nothing_is_guessed(client, task, owner):
    sub = queued(task, owner, minutes_ago=1)
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert '<span id="phase">1st in line</span>' in html and 'id="typical"' not in html
    done = finished(task, owner, seconds=40)
    assert queue_reads.live(submission=done) == {}


def test_a_retry_not_due_yet_says_why_it_waits(client, task, owner):
    sub = queued(task, owner, minutes_ago=1)
    Submission.objects.filter(pk=sub.pk).update(enqueued_at=timezone.now() + timedelta(seconds=20),
                                                phase="retrying in 20 s after an infrastructure error")
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert '<span id="phase">retrying in 20 s after an infrastructure error</span>' in html


@pytest.mark.parametrize("n, words", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                                      (13, "13th"), (21, "21st"), (102, "102nd"), (111, "111th")])
def test_ordinals(n, words):
    assert queue_reads.ordinal(n) == words


@pytest.mark.parametrize("seconds, words", [(2, "about 5 s"), (38, "about 40 s"), (54, "about 55 s"),
                                            (58, "about 1 min"), (85, "about 1 min"), (95, "about 2 min"),
                                            (600, "about 10 min")])
def test_durations_in_words(seconds, words):
    assert queue_reads.about(seconds) == words


def test_a_queued_submission_with_no_place_yet_says_so_once(client, task, owner):
    """Out of the line as read (a retry waiting out its delay, the line read a moment before the
    upload): the title says it waits for a worker, and the line below says something else."""
    sub = queued(task, owner, minutes_ago=1)
    Submission.objects.filter(pk=sub.pk).update(enqueued_at=timezone.now() + timedelta(minutes=5))
    assert queue_reads.queue_position(submission=sub) is None
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    title = re.search(r'<strong id="verdict-title">(.*?)</strong>', html).group(1)
    why = re.search(r'<p id="verdict-why">(.*?)</p>', html).group(1)
    assert title == "Queued: waiting for a worker" and "waiting for a worker" not in why
    assert "starts when a worker" in why
