"""The result page says what was measured: the verdict and why, the chart, numbers to meaningful
digits, test runs as correctness only, flagged runs awaiting review, the CPU as a try-out."""
import json
import re

from django.urls import reverse
from django.utils.html import escape

from evaluator import CODES, validate_report
from leaderboard import services
from leaderboard.models import Submission
from leaderboard.web.result import REASON_WORDS
from web_helpers import make_done, report_for


def page(client, user, sub, name="submission_detail"):
    client.force_login(user)
    return client.get(reverse(name, args=[sub.pk])).content.decode()


def box(html):
    return re.search(r'<div class="verdict-box (\w+)" id="verdict-box">\s*<strong id="verdict-title">(.*?)</strong>\s*'
                     r'<p id="verdict-why">(.*?)</p>', html, re.S).groups()


def test_a_verified_gpu_result_reads_in_one_line(client, task, owner):
    tone, title, why = box(page(client, owner, make_done(task, owner, speedup=1.25)))
    assert (tone, title) == ("ok", "Verified")
    assert "1.25x the speed of torch.compile on NVIDIA H200" in why and "it ranks" in why


def test_a_cpu_result_is_a_tryout_with_interpreter_timings(client, task, owner):
    html = page(client, owner, make_done(task, owner, speedup=0.0031234, device_type="cpu"))
    tone, title, why = box(html)
    assert title == "Verified" and "0.00312x" in why and "try-out" in why and "interpreter timings" in why
    assert 'id="tryout"' in html and "not comparable to GPU results" in html
    # the share of a floor set above any CPU says nothing on a CPU: not shown
    assert "Share of" not in html and "Share of" in page(client, owner, make_done(task, owner, speedup=1.1))
    assert "on CPU" in re.search(r'<dd><strong id="speedup-compile">.*?</dd>', html, re.S).group(0)


def test_a_test_run_is_visibly_correctness_only(client, task, owner):
    html = page(client, owner, make_done(task, owner, mode="test", device_type="cpu"))
    tone, title, why = box(html)
    assert title == "Verified (test run)" and "correctness only" in why and "never rank" in why
    assert '<span class="badge test" id="verdict">Verified (test run)</span>' in html
    assert 'class="badge verified"' not in html
    client.force_login(owner)
    profile = client.get(reverse("profile")).content.decode()
    assert "Verified (test run)" in profile and 'badge verified' not in profile


def test_a_flagged_run_says_it_awaits_review_and_does_not_rank(client, task, owner):
    sub = make_done(task, owner, speedup=2.1, verdict="flagged", reasons=["2.10x faster than torch.compile"],
                    codes=["too_fast_vs_compile"])
    tone, title, why = box(page(client, owner, sub))
    assert tone == "warn" and title == "Flagged: awaiting review, not ranked until approved"
    assert "An admin will look at it" in why and "2.10x faster" in why
    assert "awaiting review" in client.get(reverse("profile")).content.decode()


def test_a_rejected_run_says_why_and_a_failed_shape_shows_its_max_abs_error(client, task, owner):
    sub = make_done(task, owner, verdict="rejected", reasons=["test shape M=7, N=131: output differs"],
                    codes=["mismatch"])
    report = dict(sub.report)
    report["tests"] = [{"shape": {"M": 7, "N": 131}, "passed": False, "max_abs_err": None,
                        "message": "test shape M=7, N=131: output differs from the reference: max abs error 1, "
                                   "worst element 3e+04x the allowed error"}]
    Submission.objects.filter(pk=sub.pk).update(report=report)
    html = page(client, owner, sub)
    assert box(html)[:2] == ("bad", "Rejected")
    row = re.search(r'<table id="tests">.*?</table>', html, re.S).group(0)
    assert re.search(r'<td class="num">1.0</td>', row), row


def test_no_raw_none_phase_keys_or_long_floats(client, task, owner):
    sub = make_done(task, owner, speedup=1.1, device_type="cpu")
    report = dict(sub.report)
    report["tests"][0]["max_abs_err"] = 1.1920928955078125e-07
    report["phases"] = {"setup_s": 1.5, "startup_s": 0.4123456789, "compile_s": 12.7, "close_s": 0.2,
                        "sandbox_s": 3.0}
    Submission.objects.filter(pk=sub.pk).update(report=report, versions={"python": "3.12.3", "torch": "2.11.0",
                                                                        "cuda": None})
    html = page(client, owner, sub)
    result = re.search(r'<section id="result".*?</section>', html, re.S).group(0)
    assert "None" not in result and "startup_s" not in result and "cuda" not in result
    assert "1.2e-07" in result and "1.1920928955078125e-07" not in result
    assert "start-up 0.41 s" in result and "compile (beside the checks) 13 s" in result
    # in the order the evaluation runs them, whatever order the database keeps the keys in; a
    # compile longer than the set-up ran beside the checks, and says so
    assert ("set-up 1.5 s · start-up 0.41 s · compile (beside the checks) 13 s · clean-up 0.20 s · sandbox 3.0 s"
            in result)
    shown = re.sub(r"<script.*?</script>", "", result, flags=re.S)  # the chart's data is JSON, not text
    assert not re.search(r"\d\.\d{8,}", shown)


def test_the_result_chart_has_every_side_with_its_band_and_the_floor(client, task, owner):
    sub = make_done(task, owner, speedup=1.1)
    report = dict(sub.report)
    report["shapes"][0].update(candidate_p10_ms=0.14, candidate_p90_ms=0.17, eager_p10_ms=0.26, eager_p90_ms=0.29,
                               compile_p10_ms=0.16, compile_p90_ms=0.17, calls_per_batch=8, batches=12)
    Submission.objects.filter(pk=sub.pk).update(report=report)
    html = page(client, owner, sub)
    fig = json.loads(re.search(r'<script id="chart-result-data" type="application/json">(.*?)</script>',
                               html, re.S).group(1))
    names = [t["name"] for t in fig["data"]]
    assert names == ["your kernel", "eager PyTorch", "torch.compile", "roofline floor"]
    kernel = fig["data"][0]
    assert kernel["y"] == [0.15] and kernel["error_y"]["array"][0] == 0.17 - 0.15
    assert abs(kernel["error_y"]["arrayminus"][0] - 0.01) < 1e-9
    assert fig["data"][3]["y"] == [task.floors_for(sub.device_type)[0]["floor_ms"]]
    assert "title" not in fig["layout"] or not fig["layout"]["title"].get("text")  # the page's heading is the title
    assert "calls_per_batch" not in html  # an extra key of the report is harmless
    assert 'id="spread-note"' in html


def test_the_floor_in_the_table_is_the_one_in_the_log(client, task, owner):
    """The judge checks a CPU run against its own ceilings and logs that floor; the table shows it."""
    from evaluator.common import timing
    from evaluator.tasks import get_task

    shape = task.bench_shapes["cpu"][0]
    judge_floor = get_task("softmax").floor_ms(shape, bandwidth_bytes_s=timing.CPU_BANDWIDTH,
                                               peak_flop_s=timing.CPU_PEAK_FLOPS)
    sub = make_done(task, owner, speedup=0.5, device_type="cpu")
    report = dict(sub.report)
    report["shapes"][0]["floor_ms"] = judge_floor
    Submission.objects.filter(pk=sub.pk).update(report=report, logs=f"floor {judge_floor:.4g} ms")
    html = page(client, owner, sub)
    table = re.search(r'<table id="shapes">.*?</table>', html, re.S).group(0)
    assert f"{judge_floor:.3g}" in table and "judge:" not in table
    assert f"{judge_floor:.4g}"[:5] in html  # the log's number, same leading digits


def test_elapsed_time_while_running_and_the_finished_time_inside_the_live_part(client, task, owner):
    sub = Submission.objects.create(user=owner, task=task, source="def custom_kernel(x): pass\n", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="w")
    partial = page(client, owner, sub, "submission_status")
    assert re.search(r'<span class="muted" id="elapsed">running for \d+ s</span>', partial)
    assert "finished-at" not in partial
    report = report_for(task, device="cpu")
    assert services.submission_store_result(submission=claimed, report=report)
    partial = page(client, owner, sub, "submission_status")
    assert 'id="finished-at"' in partial and "took " in partial and "hx-get" not in partial


def _reading(sm, temp, power, reasons, error=""):
    return {"index": 3, "uuid": "9a2c3e55-1b7d-4f0a-8e61-0c5d2f4b7a19", "sm_mhz": sm, "mem_mhz": 3201,
            "temp_c": temp, "power_w": power, "power_limit_w": 700.0, "reasons": reasons, "error": error}


def test_the_gpu_state_before_and_after_timing_is_shown_with_a_throttle_flag(client, task, owner):
    why = ("the GPU throttled during timing: SM 1980->1410 MHz, memory 3201->3201 MHz, 84 C, 690 W of 700 W, "
           "reasons: sw_thermal")
    sub = make_done(task, owner, speedup=1.1, verdict="flagged", reasons=[why], codes=["gpu_throttled"])
    report = {**sub.report, "gpu_state": {"before": _reading(1980, 41, 118.0, ["gpu_idle"]),
                                          "after": _reading(1410, 84, 690.4, ["sw_thermal"])}}
    assert validate_report(report)["gpu_state"] == report["gpu_state"]  # what the worker would store
    Submission.objects.filter(pk=sub.pk).update(report=report)
    html = page(client, owner, sub)
    table = re.search(r'<table id="gpu-state">.*?</table>', html, re.S).group(0)
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
    cells = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    assert cells == [["SM clock", "1980 MHz", "1410 MHz"], ["Memory clock", "3201 MHz", "3201 MHz"],
                     ["Temperature", "41 °C", "84 °C"], ["Power", "118 W of 700 W", "690 W of 700 W"],
                     ["Clock reasons", "gpu_idle", "sw_thermal"]]
    note = re.search(r'<p class="muted" id="gpu-state-note">(.*?)</p>', html, re.S).group(1)
    assert "on GPU 3" in note and "never changes them" in note and "Not read" not in note
    # the reason as a sentence of its own (result.sentence): capitalised, a full stop at its end
    assert "The GPU lowered its clocks" in html and escape("T" + why[1:] + ".") in html and box(html)[0] == "warn"


def test_an_unread_gpu_state_says_why_and_a_report_without_one_shows_no_table(client, task, owner):
    sub = make_done(task, owner, speedup=1.1)
    assert 'id="gpu-state"' not in page(client, owner, sub)
    missing = {key: None for key in ("index", "uuid", "sm_mhz", "mem_mhz", "temp_c", "power_w", "power_limit_w")}
    unread = {**missing, "reasons": [], "error": "NVML: NVML Shared Library Not Found"}
    Submission.objects.filter(pk=sub.pk).update(report={**sub.report, "gpu_state": {"before": unread,
                                                                                      "after": unread}})
    html = page(client, owner, sub)
    assert re.search(r"<td>SM clock</td><td>–</td><td>–</td>", html)
    assert "Not read: before: NVML: NVML Shared Library Not Found." in html


def test_every_reason_code_has_words():
    assert set(CODES) <= set(REASON_WORDS)


def test_the_compile_inside_the_set_up_reads_as_part_of_it():
    from evaluator import Report
    from leaderboard.web.result import phases

    def stored(given):
        return Report.from_stored({"task": "softmax", "mode": "ranked", "device": "cpu", "phases": given})

    alone = stored({"setup_s": 38.0, "startup_s": 1.0, "compile_s": 37.0, "correctness_s": 2.0})
    assert phases(alone) == [("set-up", 38.0), ("of which compile", 37.0), ("start-up", 1.0),
                             ("correctness checks", 2.0)]
    beside = stored({"setup_s": 3.0, "compile_s": 9.0, "correctness_s": 10.0})
    assert phases(beside) == [("set-up", 3.0), ("compile (beside the checks)", 9.0), ("correctness checks", 10.0)]


def test_a_run_stopped_at_a_failed_shape_says_how_many_were_not_run_and_claims_no_times(client, task, owner):
    report = report_for(task, verdict="rejected", device="cpu", reasons=["wrong answer on test shape {M=7, N=131}"],
                        codes=["mismatch"])
    report["tests"] = [{"shape": {"M": 1, "N": 1}, "passed": True, "max_abs_err": 0.0, "message": ""},
                       {"shape": {"M": 7, "N": 131}, "passed": False, "max_abs_err": 0.01, "message": "wrong answer"}]
    sub = Submission.objects.create(user=owner, task=task, mode="ranked", device_type="cpu", source="x = 1\n",
                                    filename="k.py", celery_task_id="t")
    assert services.submission_store_result(submission=services.submission_claim(submission_id=sub.pk, worker="t"),
                                            report=report)
    html = page(client, owner, sub)
    not_run = re.search(r'<p class="muted" id="tests-not-run">(.*?)</p>', html, re.S).group(1)
    assert "stopped at the first failure" in not_run and "other 4 test shapes were not run" in not_run
    # no times were taken: the try-out note, which is about times, has nothing to explain
    assert 'id="tryout"' not in html and "interpreter timings" not in html
    # a run that passed every shape it ran says nothing of shapes not run
    assert 'id="tests-not-run"' not in page(client, owner, make_done(task, owner, device_type="cpu"))


def test_a_rejection_headline_is_the_reason_that_rejected_it_not_an_audit_hint(client, task, owner):
    sub = make_done(task, owner, verdict="rejected", device_type="cpu",
                    codes=["suspicious_source", "crash"],
                    reasons=["suspicious source: line 1: imports ctypes", "The kernel crashed. killed by signal 11"])
    tone, title, why = box(page(client, owner, sub))
    assert (tone, title) == ("bad", "Rejected") and "The kernel crashed" in why and "ctypes" not in why


def test_a_run_that_needed_a_second_attempt_says_so(client, task, owner):
    sub = make_done(task, owner)
    assert 'id="attempts"' not in page(client, owner, sub)
    Submission.objects.filter(pk=sub.pk).update(attempts=2)
    text = re.search(r'<span class="muted" id="attempts">(.*?)</span>', page(client, owner, sub)).group(1)
    assert text.startswith("attempt 2: an earlier attempt ended without a result") and "not your code" in text


def test_a_flagged_test_run_awaits_no_review(client, task, owner):
    sub = make_done(task, owner, mode="test", verdict="flagged", codes=["no_kernel_launched"], reasons=["no kernel ran."])
    tone, title, why = box(page(client, owner, sub))
    assert tone == "warn" and title == "Flagged (test run): never ranked" and "An admin will look" not in why
    assert "awaiting review" not in client.get(reverse("profile")).content.decode()


def _sides_and_columns(html):
    fig = json.loads(re.search(r'<script id="chart-result-data" type="application/json">(.*?)</script>',
                               html, re.S).group(1))
    header = re.search(r'<table id="shapes">\s*<thead>(.*?)</thead>', html, re.S).group(1)
    label = re.search(r'id="chart-result" role="img" aria-label="([^"]*)"', html).group(1)
    return fig["data"][0]["name"], re.findall(r"<th[^>]*>(.*?)</th>", header)[1], label


def test_only_the_owner_reads_your_kernel_on_a_public_entry(client, task, owner, other, staff):
    sub = make_done(task, owner, speedup=1.1)  # a ranked entry: public
    assert _sides_and_columns(page(client, owner, sub)) == (
        "your kernel", "Yours", "Time per benchmark shape: your kernel, eager, torch.compile and the roofline floor")
    for viewer in (other, staff):
        html = page(client, viewer, sub)
        assert _sides_and_columns(html) == (
            "this kernel", "Kernel", "Time per benchmark shape: this kernel, eager, torch.compile and the roofline floor")
        assert "your kernel" not in html and ">Yours<" not in html
    client.logout()
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert _sides_and_columns(html)[:2] == ("this kernel", "Kernel") and "your kernel" not in html
    # the live part the page polls says the same
    assert "your kernel" not in client.get(reverse("submission_status", args=[sub.pk])).content.decode()
    assert "your kernel" in page(client, owner, sub, "submission_status")


def test_a_disqualification_is_said_once_on_each_page(client, task, owner, staff):
    sub = make_done(task, owner, speedup=1.3)
    services.submission_disqualify(submission=sub, actor=staff, reason="copied")
    for viewer, name in ((owner, "submission_detail"), (staff, "submission_detail"), (staff, "audit_item")):
        html = page(client, viewer, sub, name)
        assert html.count("Disqualified by an admin") == 1, (viewer, name)
        assert "copied" in re.search(r'<ul class="reasons" id="[\w-]+">(.*?)</ul>', html, re.S).group(1)
    tone, title, why = box(page(client, owner, sub))
    assert (tone, title) == ("bad", "Disqualified") and "copied" in why


def test_a_reason_after_a_full_stop_starts_a_sentence(client, task, owner):
    """The judge writes its reasons in lower case ("no Triton or CUDA kernel ..."); after a full
    stop (the box's "An admin will look at it.", the code's words in the list) each reads as a
    sentence of its own, while a name such as custom_kernel keeps its case."""
    sub = make_done(task, owner, verdict="flagged", codes=["no_kernel_launched", "suspicious_source"],
                    reasons=["no Triton or CUDA kernel of the submission ran", "custom_kernel imports ctypes"])
    html = page(client, owner, sub)
    tone, title, why = box(html)
    assert why == "An admin will look at it. No Triton or CUDA kernel of the submission ran."
    items = re.findall(r"<li><strong>[^<]*</strong> (.*?) <code>", re.search(r'id="reasons">(.*?)</ul>', html, re.S).group(1))
    assert items == ["No Triton or CUDA kernel of the submission ran.", "custom_kernel imports ctypes."]
    from leaderboard.web.result import sentence

    assert sentence("torch.compile was slower") == "torch.compile was slower."
    assert sentence("the file does not define a top-level `custom_kernel`") == \
        "The file does not define a top-level custom_kernel."
    assert sentence("benchmark shape M=8: 0.1 ms is below the floor.") == "Benchmark shape M=8: 0.1 ms is below the floor."


def test_small_numbers_read_in_one_format_on_the_result_page(client, task, owner):
    """The tests' max abs errors 1.7e-06 and 1.2e-07 in one column: both with an exponent, never
    0.0000017 beside 1.2e-07 (the digits asked for no longer move the switch)."""
    from leaderboard.templatetags.numbers import ms, pct, sig

    assert [sig(1.7e-6, 2), sig(1.2e-7, 2), sig(0.00017, 2)] == ["1.7e-06", "1.2e-07", "0.00017"]
    assert ms(1.7e-6) == "1.70e-06 ms" and pct(3e-5) == "3.0e-05 %" and sig(0.0012345) == "0.00123"
    sub = make_done(task, owner, speedup=1.1, device_type="cpu")
    report = dict(sub.report)
    first = report["tests"][0]
    report["tests"] = [{**first, "max_abs_err": 1.7e-6}, {**first, "max_abs_err": 1.2e-7}]
    Submission.objects.filter(pk=sub.pk).update(report=report)
    row = re.search(r'<table id="tests">.*?</table>', page(client, owner, sub), re.S).group(0)
    errors = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert errors[:2] == ["1.7e-06", "1.2e-07"], errors
