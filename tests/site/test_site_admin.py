"""The real Django admin: the flagged queue, its filters, and audited approve / disqualify / re-run / ban."""
import re

import pytest
from django.urls import reverse

from leaderboard import selectors, services
from leaderboard.models import AuditEntry, Submission
from site_helpers import H200, make_done, queued_task_ids

pytestmark = pytest.mark.django_db

QUEUE = reverse("admin:leaderboard_flaggedsubmission_changelist")
SUBMISSIONS = reverse("admin:leaderboard_submission_changelist")
USERS = reverse("admin:auth_user_changelist")


@pytest.fixture
def admin_client_(client, staff):
    client.force_login(staff)
    return client


def _flagged(task, user, code="too_fast_vs_compile", speedup=1.8):
    return make_done(task, user, verdict="flagged", codes=(code,), speedup=speedup)


def _action(client, url, action, ids, **extra):
    return client.post(url, {"action": action, "_selected_action": [str(i) for i in ids], **extra})


def test_the_queue_lists_flagged_submissions_only(admin_client_, task, owner, other):
    flagged = _flagged(task, owner)
    fine = make_done(task, other)
    page = admin_client_.get(QUEUE)
    assert page.status_code == 200
    ids = [obj.pk for obj in page.context["cl"].result_list]
    assert ids == [flagged.pk] and fine.pk not in ids


def test_the_queue_filters_by_reason_task_device_and_date(admin_client_, task, owner, other):
    fast = _flagged(task, owner, code="too_fast_vs_compile")
    floor = _flagged(task, other, code="below_floor")
    cpu = make_done(task, other, device_type="cpu", verdict="flagged", codes=("no_kernel_launched",))

    def ids(**params):
        page = admin_client_.get(QUEUE, params)
        assert page.status_code == 200
        return sorted(obj.pk for obj in page.context["cl"].result_list)

    assert ids(reason="below_floor") == [floor.pk]
    assert ids(reason="too_fast_vs_compile") == [fast.pk]
    assert ids(device_type="cpu") == [cpu.pk]
    assert ids(device_type=H200) == sorted([fast.pk, floor.pk])
    assert ids(task__id__exact=task.pk) == sorted([fast.pk, floor.pk, cpu.pk])
    day = fast.created_at
    assert ids(created_at__year=day.year, created_at__month=day.month, created_at__day=day.day) == sorted(
        [fast.pk, floor.pk, cpu.pk])


def test_approve_asks_for_a_reason_then_ranks_and_audits(admin_client_, task, owner, staff):
    sub = _flagged(task, owner)
    page = _action(admin_client_, QUEUE, "approve", [sub.pk])
    assert page.status_code == 200 and b"Reason" in page.content  # the intermediate page
    assert not AuditEntry.objects.exists()
    done = _action(admin_client_, QUEUE, "approve", [sub.pk], apply="Approve", reason="read the kernel: real")
    assert done.status_code == 302
    sub.refresh_from_db()
    assert sub.verdict == "verified" and sub.approved_by == staff and sub.approved_at
    (entry,) = AuditEntry.objects.all()
    assert (entry.action, entry.actor, entry.submission, entry.reason) == (
        "approve", staff, sub, "read the kernel: real")
    assert [e.pk for e in selectors.leaderboard_for_task(task=task, device_type=H200)] == [sub.pk]
    # the submission's admin page shows the audit trail
    page = admin_client_.get(reverse("admin:leaderboard_submission_change", args=[sub.pk]))
    assert b"read the kernel: real" in page.content


def test_disqualify_requires_a_reason_and_hides(admin_client_, task, owner, staff):
    sub = _flagged(task, owner)
    page = _action(admin_client_, QUEUE, "disqualify", [sub.pk], apply="Disqualify", reason="")
    assert page.status_code == 200 and b"This field is required" in page.content
    sub.refresh_from_db()
    assert sub.verdict == "flagged" and not AuditEntry.objects.exists()
    _action(admin_client_, QUEUE, "disqualify", [sub.pk], apply="Disqualify", reason="reads the answer from gc")
    sub.refresh_from_db()
    assert sub.verdict == "rejected" and sub.hidden
    assert sub.reason_codes[-1] == "disqualified" and "reads the answer from gc" in sub.reasons[-1]
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor, entry.reason) == ("disqualify", staff, "reads the answer from gc")
    assert list(selectors.flagged_queue()) == []


def test_rerun_queues_it_again_and_audits(admin_client_, task, owner, staff, eval_queue, redis_client,
                                         django_capture_on_commit_callbacks):
    sub = make_done(task, owner)
    with django_capture_on_commit_callbacks(execute=True):
        _action(admin_client_, SUBMISSIONS, "rerun", [sub.pk], apply="Re-run", reason="evaluator fix")
    sub.refresh_from_db()
    assert sub.status == "queued" and sub.verdict == "" and sub.speedup_vs_compile is None
    assert sub.attempts == 0 and sub.results_stored == 0
    assert queued_task_ids(redis_client, eval_queue) == [sub.celery_task_id]
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor, entry.reason, entry.submission) == ("rerun", staff, "evaluator fix", sub)


def test_an_action_that_does_not_apply_is_refused_and_not_audited(admin_client_, task, owner):
    sub = make_done(task, owner)  # verified, not flagged
    page = _action(admin_client_, SUBMISSIONS, "approve", [sub.pk], apply="Approve", reason="")
    assert page.status_code == 302
    page = admin_client_.get(page.url)
    assert b"Only a flagged result can be approved" in page.content
    assert not AuditEntry.objects.exists()


def test_ban_and_unban_from_the_user_admin(admin_client_, task, owner, staff):
    sub = make_done(task, owner)
    page = _action(admin_client_, USERS, "ban", [owner.pk], apply="Ban", reason="")
    assert b"This field is required" in page.content
    _action(admin_client_, USERS, "ban", [owner.pk], apply="Ban", reason="many accounts")
    owner.profile.refresh_from_db()
    assert owner.profile.banned and owner.profile.banned_reason == "many accounts"
    assert selectors.leaderboard_for_task(task=task, device_type=H200) == []
    assert Submission.objects.filter(pk=sub.pk).exists()
    _action(admin_client_, USERS, "unban", [owner.pk], apply="Unban", reason="appeal")
    owner.profile.refresh_from_db()
    assert not owner.profile.banned
    assert [e.pk for e in selectors.leaderboard_for_task(task=task, device_type=H200)] == [sub.pk]
    actions = list(AuditEntry.objects.order_by("created_at").values_list("action", "actor", "target_user", "reason"))
    assert actions == [("ban", staff.pk, owner.pk, "many accounts"), ("unban", staff.pk, owner.pk, "appeal")]


def test_non_staff_cannot_use_the_admin(client, task, owner, other):
    sub = _flagged(task, owner)
    client.force_login(other)
    assert client.get(QUEUE).status_code == 302  # to the admin login
    _action(client, QUEUE, "approve", [sub.pk], apply="Approve", reason="me")
    sub.refresh_from_db()
    assert sub.verdict == "flagged" and not AuditEntry.objects.exists()


def test_every_admin_page_renders(admin_client_, task, owner):
    sub = _flagged(task, owner)
    owner_token = services.api_token_create(user=owner)[0]
    urls = [
        reverse("admin:index"),
        reverse("admin:leaderboard_flaggedsubmission_change", args=[sub.pk]),
        reverse("admin:leaderboard_task_changelist"),
        reverse("admin:leaderboard_task_change", args=[task.pk]),
        reverse("admin:leaderboard_auditentry_changelist"),
        reverse("admin:leaderboard_apitoken_changelist"),
        reverse("admin:leaderboard_apitoken_change", args=[owner_token.pk]),
        reverse("admin:auth_user_change", args=[owner.pk]),
        USERS,
        SUBMISSIONS + "?reason=too_fast_vs_compile&status__exact=done",
    ]
    for url in urls:
        assert admin_client_.get(url).status_code == 200, url


def test_the_submission_list_speaks_the_sites_words(admin_client_, task, owner, staff):
    cpu = make_done(task, owner, device_type="cpu", speedup=0.00134)
    test_run = make_done(task, owner, mode="test")
    rejected = make_done(task, owner, verdict="rejected", codes=("mismatch",))
    cheat = make_done(task, owner, speedup=1.4)
    services.submission_disqualify(submission=cheat, actor=staff, reason="copied")
    page = admin_client_.get(SUBMISSIONS)
    rows = {int(m.group(1)): m.group(0)
            for m in re.finditer(r'<tr>.*?/change/">(\d+)</a>.*?</tr>', page.content.decode(), re.S)}
    assert "0.00134x" in rows[cpu.pk] and "0.00x" not in rows[cpu.pk] and ">CPU<" in rows[cpu.pk]
    assert ">Verified (test run)<" in rows[test_run.pk]
    assert ">Rejected<" in rows[rejected.pk]
    assert ">Disqualified<" in rows[cheat.pk] and "Rejected" not in rows[cheat.pk]
    # nothing to show is one dash, whichever column: a test run has no speedup and no reasons
    assert re.findall(r'<td class="field-(?:speedup|reason_list)">(.*?)</td>', rows[test_run.pk]) == ["–", "–"]

    def ids(**params):
        return sorted(obj.pk for obj in admin_client_.get(SUBMISSIONS, params).context["cl"].result_list)

    assert ids(result="disqualified") == [cheat.pk]
    assert ids(result="rejected") == [rejected.pk]
    assert ids(result="verified") == sorted([cpu.pk, test_run.pk])
