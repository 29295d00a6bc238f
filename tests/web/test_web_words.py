"""One word per state on every page (evaluator/contract/words.py; docs/site.md, "One word per state"), one
default mode, and flag words that say which finding the judge made."""
import logging
import re
from pathlib import Path

from django.urls import reverse

from evaluator import state_word, status_word, verdict_word
from leaderboard import services
from leaderboard.client.output import verdict_lines
from leaderboard.models import Submission
from leaderboard.web.result import LIBRARY_WORK_WORDS, REASON_WORDS
from web_helpers import SOURCE, make_done

ROOT = Path(__file__).resolve().parents[2]
NONE_RAN = REASON_WORDS["no_kernel_launched"]


def html(client, user, name, *args, **params) -> str:
    client.force_login(user)
    r = client.get(reverse(name, args=args), params)
    assert r.status_code == 200
    return r.content.decode()


def flagged_library(task, user, *, kernels):
    """A flagged ranked run (the review queue holds only those) whose report says which of the
    submission's kernels ran."""
    sub = make_done(task, user, verdict="flagged", codes=["no_kernel_launched"],
                    reasons=["the judge's own sentence"])
    report = {**sub.report, "kernels_launched": kernels}
    Submission.objects.filter(pk=sub.pk).update(report=report)
    return Submission.objects.get(pk=sub.pk)


def test_the_table_gives_the_api_values_their_words():
    assert verdict_word("verified") == "Verified"
    assert verdict_word("verified", "test") == "Verified (test run)"
    assert verdict_word("verified", "profile") == "Verified (profile run)"
    assert verdict_word("flagged") == "Flagged" and verdict_word("rejected", "test") == "Rejected (test run)"
    assert verdict_word("rejected", hidden=True) == "Disqualified"
    assert [status_word(s) for s in ("queued", "running", "done", "failed")] == ["Queued", "Running", "Done", "Failed"]
    assert state_word(status="running", verdict="", mode="test") == "Running"
    assert state_word(status="done", verdict="verified", mode="test") == "Verified (test run)"


def test_every_page_prints_a_test_run_and_a_status_in_the_same_words(client, task, owner, staff):
    passed = make_done(task, owner, mode="test", device_type="cpu")
    waiting = services.submission_create(user=owner, task=task, source=SOURCE, filename="k.py", mode="ranked")
    word = "Verified (test run)"
    result = html(client, owner, "submission_detail", passed.pk)
    assert re.search(r'id="verdict-title">Verified \(test run\)<', result)
    assert f'id="verdict">{word}<' in result and 'id="status">Done<' in result
    assert 'id="status">Queued<' in html(client, owner, "submission_detail", waiting.pk)
    profile = html(client, owner, "profile")
    assert word in profile and ">Queued<" in profile and ">queued<" not in profile and ">done<" not in profile
    compare = html(client, owner, "compare", a=passed.pk, b=waiting.pk)
    assert f"· {word}" in compare and "· Queued" in compare
    item = html(client, staff, "audit_item", waiting.pk)
    assert ">Queued<" in item and "correct (" not in item


def test_a_disqualified_entry_reads_disqualified_on_its_page_and_the_audit_pages(client, task, owner, staff):
    earlier = make_done(task, owner, speedup=1.1)
    sub = make_done(task, owner, speedup=1.3)
    services.submission_disqualify(submission=earlier, actor=staff, reason="copied")
    services.submission_disqualify(submission=sub, actor=staff, reason="copied")
    item = html(client, staff, "audit_item", sub.pk)
    assert re.search(r'id="audit-verdict">Disqualified<', item)
    earlier_rows = item.split('id="earlier"')[1].split("</table>")[0]
    assert ">Disqualified<" in earlier_rows and ">rejected<" not in earlier_rows
    result = html(client, owner, "submission_detail", sub.pk)
    assert 'id="verdict-title">Disqualified<' in result and 'id="verdict">Disqualified<' in result


def test_a_flag_says_library_calls_did_the_work_when_the_submissions_own_kernel_ran(client, task, owner, staff):
    token = flagged_library(task, owner, kernels=["_softmax_kernel"])
    result = html(client, owner, "submission_detail", token.pk)
    assert f"<strong>{LIBRARY_WORK_WORDS}</strong>" in result.replace("&#x27;", "'")
    assert NONE_RAN not in result
    why = re.search(r'id="verdict-why">(.*?)</p>', result, re.S).group(1).replace("&#x27;", "'")
    assert "The judge's own sentence." in why and "No kernel" not in why
    queue = html(client, staff, "audit_queue").replace("&#x27;", "'")
    assert LIBRARY_WORK_WORDS in queue and NONE_RAN not in queue
    assert LIBRARY_WORK_WORDS in html(client, staff, "audit_item", token.pk).replace("&#x27;", "'")


def test_a_flag_says_no_kernel_ran_only_when_none_of_the_submissions_kernels_ran(client, task, owner, staff):
    none = flagged_library(task, owner, kernels=[])
    result = html(client, owner, "submission_detail", none.pk).replace("&#x27;", "'")
    assert f"<strong>{NONE_RAN}</strong>" in result and LIBRARY_WORK_WORDS not in result
    queue = html(client, staff, "audit_queue").replace("&#x27;", "'")
    assert NONE_RAN in queue and LIBRARY_WORK_WORDS not in queue


def test_no_template_prints_a_raw_status_or_verdict(client):
    """A state reaches the text of a page only through the words filters (an attribute may carry
    the value: a CSS class, data-status)."""
    raw = re.compile(r"\{\{\s*[\w.]*\b(status|verdict)\s*(\|default:[^}]*)?\}\}")
    found = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for m in raw.finditer(text):
            before = text[:m.start()]
            inside_a_tag = before.rfind("<") > before.rfind(">")
            if not inside_a_tag:
                found.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert found == []


def test_the_upload_form_preselects_ranked_and_says_it_is_the_default(client, task, owner):
    page = html(client, owner, "upload")
    checked = re.findall(r'<input type="radio" name="mode" value="(\w+)"[^>]*\bchecked\b', page)
    assert checked == ["ranked"]
    assert re.findall(r'name="mode" value="(\w+)"', page)[0] == "ranked"
    assert "ranked (the default" in page
    # a form sent without a mode is ranked, as an API call without one is
    r = client.post(reverse("upload"), {"task": task.name, "code": SOURCE})
    assert r.status_code == 302, r.content.decode()[:2000]
    assert Submission.objects.get(user=owner).mode == "ranked"


def test_the_cli_and_manage_evaluate_print_the_same_words():
    assert verdict_lines({"verdict": "verified", "mode": "test"})[0] == "verdict: Verified (test run)"
    assert verdict_lines({"verdict": "rejected", "mode": "ranked", "hidden": True})[0] == "verdict: Disqualified"
    assert verdict_lines({"verdict": "flagged", "mode": "ranked"})[0] == "verdict: Flagged"


def test_the_worker_logs_a_stored_result_in_the_same_words(task, owner, caplog):
    with caplog.at_level(logging.INFO, logger="leaderboard.services.pipeline"):
        sub = make_done(task, owner, mode="test", device_type="cpu")
    assert f"submission {sub.pk}: stored, Verified (test run)" in caplog.text


def test_the_evaluators_summary_prints_the_same_words():
    from evaluator.cli import summary
    from evaluator.contract.report import empty

    report = {**empty(task="softmax", mode="test", device="cpu"), "phases": {}}
    assert summary(report).splitlines()[0] == "softmax on cpu: Verified (test run)"
