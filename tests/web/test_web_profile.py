"""The profile section of a result page and the .ncu-rep download: shown to the owner and staff
only, escaped, next to the roofline floor; the upload form offers the mode and says when its
limit is reached."""
import re

from django.urls import reverse

from leaderboard import scoring, services
from leaderboard.models import Submission
from leaderboard.services import profiling
from web_helpers import SOURCE, report_for

SOL = "GPU Speed Of Light Throughput"
NCU_REP = b"NVIDIA Nsight Compute report \x00\x01\x02 bytes"


def ncu_profile(**changes) -> dict:
    kernel = {"id": 0, "name": "_softmax_rows", "block": "(1024, 1, 1)", "grid": "(8192, 1, 1)",
              "duration_ms": 0.2, "rules": [{"name": "SOLBottleneck", "type": "OPT", "text": "Memory is busy."}],
              "sections": [{"name": SOL, "metrics": [
                  {"name": "Duration", "unit": "usecond", "value": "200.00"},
                  {"name": "DRAM Throughput", "unit": "%", "value": "91.52"},
                  {"name": "Elapsed Cycles", "unit": "cycle", "value": "1,234,567"}]},
                  {"name": "Memory Workload Analysis", "metrics": [
                      {"name": "Memory Throughput", "unit": "Tbyte/second", "value": "4.31"}]}]}
    profile = {"tool": "ncu", "shape": {"M": 8192, "N": 8192}, "floor_ms": 0.1, "bytes_moved": 5.4e8,
               "flops": 3.4e8, "ncu": {"status": "ok", "note": ""}, "kernels": [kernel], "ops": [], "table": "",
               "file_bytes": len(NCU_REP), "seconds": 20.0, "notes": []}
    profile.update(changes)
    return profile


def make_profiled(task, user, profile, *, device_type="cuda:NVIDIA H200", file=NCU_REP) -> Submission:
    device = "cpu" if device_type == "cpu" else "cuda"
    report = report_for(task, mode="profile", device=device)
    report["profile"] = profile
    sub = Submission.objects.create(user=user, task=task, mode="profile", device_type=device_type, source=SOURCE,
                                    filename="softmax.py", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report)
    sub = Submission.objects.get(pk=sub.pk)
    profiling.profile_file_store(submission=sub, data=file)
    return sub


def html_of(client, user, sub) -> str:
    if user is not None:
        client.force_login(user)
    return client.get(reverse("submission_detail", args=[sub.pk])).content.decode()


def test_the_owner_sees_the_speed_of_light_next_to_the_floor(client, task, owner):
    sub = make_profiled(task, owner, ncu_profile())
    html = html_of(client, owner, sub)
    assert "Verified (profile run)" in html and "never rank" in html
    assert 'id="verdict">Verified (profile run)</span>' in html
    section = html.split('<div id="profile" class="profile">')[1].split("<h3>Correctness checks")[0]
    assert "<caption>GPU Speed Of Light Throughput</caption>" in section
    assert "<caption>Memory Workload Analysis</caption>" in section
    assert "DRAM Throughput 91.52 %" in section and "1,234,567" in section
    # the floor used is the published one for this device and shape, and its share of the duration
    floor = scoring.floor_ms_for(task=task, device_type=sub.device_type, shape={"M": 8192, "N": 8192})
    assert floor and f"{floor / 0.2 * 100:.3g} %" in section.replace("&nbsp;", " ")
    assert "SOLBottleneck" in section and "Memory is busy." in section
    assert f'href="{reverse("submission_profile_file", args=[sub.pk])}"' in section
    assert "never used for a score" in section


def test_the_file_is_the_owners_and_staffs_only(client, task, owner, other, staff):
    sub = make_profiled(task, owner, ncu_profile())
    url = reverse("submission_profile_file", args=[sub.pk])
    assert client.get(url).status_code == 302  # log in first
    for user in (owner, staff):
        client.force_login(user)
        response = client.get(url)
        assert response.status_code == 200 and response.content == NCU_REP
        assert response["Content-Type"] == "application/octet-stream"
        assert response["Content-Disposition"] == f'attachment; filename="submission-{sub.pk}.ncu-rep"'
    client.force_login(other)
    assert client.get(url).status_code == 404
    # publishing opens the code, not the profile
    services.submission_publish(submission=sub, actor=owner)
    html = html_of(client, other, sub)
    assert "Submission #" in html and 'id="profile"' not in html
    assert client.get(url).status_code == 404
    assert client.get(reverse("submission_profile_file", args=[999999])).status_code == 404


def test_a_re_run_without_a_file_removes_the_old_one(client, task, owner):
    sub = make_profiled(task, owner, ncu_profile())
    profiling.profile_file_store(submission=sub, data=None)
    client.force_login(owner)
    assert client.get(reverse("submission_profile_file", args=[sub.pk])).status_code == 404
    assert "download the .ncu-rep" not in html_of(client, owner, sub)


def test_the_profile_is_escaped(client, task, owner):
    evil = "<script>alert(1)</script>"
    profile = ncu_profile(notes=[evil], ncu={"status": "ok", "note": evil})
    profile["kernels"][0]["name"] = evil
    profile["kernels"][0]["sections"][0]["metrics"][1]["value"] = evil
    html = html_of(client, owner, make_profiled(task, owner, profile))
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_without_counters_the_page_says_why_and_shows_torch_profilers_kernels(client, task, owner):
    profile = ncu_profile(tool="torch.profiler", kernels=[], file_bytes=0, table="Name  Self CUDA\n...",
                          ncu={"status": "no_permission",
                               "note": "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"},
                          ops=[{"name": "_softmax_rows", "kind": "kernel", "calls": 1, "self_cpu_us": 0.0,
                                "cpu_total_us": 0.0, "self_device_us": 210.0, "device_total_us": 210.0},
                               {"name": "custom_kernel", "kind": "op", "calls": 1, "self_cpu_us": 50.0,
                                "cpu_total_us": 300.0, "self_device_us": 0.0, "device_total_us": 210.0}])
    html = html_of(client, owner, make_profiled(task, owner, profile, file=None))
    assert 'data-status="no_permission"' in html and "ERR_NVGPUCTRPERM" in html
    kernels = re.search(r'<table id="profile-kernels">.*?</table>', html, re.S).group(0)
    assert "_softmax_rows" in kernels and "0.210 ms" in kernels and "custom_kernel" not in kernels
    assert "custom_kernel" in re.search(r'<table id="profile-ops">.*?</table>', html, re.S).group(0)
    assert 'id="profile-download"' not in html and "torch.profiler's own table" in html


def test_the_upload_form_offers_profile_mode_and_refuses_past_its_limit(client, task, owner, settings,
                                                                       django_capture_on_commit_callbacks):
    settings.PROFILES_PER_USER = "1/h"
    client.force_login(owner)
    page = client.get(reverse("upload")).content.decode()
    assert 'value="profile"' in page and "under a profiler" in page
    data = {"task": "softmax", "mode": "profile", "code": SOURCE}
    with django_capture_on_commit_callbacks(execute=False):
        assert client.post(reverse("upload"), data).status_code == 302
        refused = client.post(reverse("upload"), data)
        text = refused.content.decode()
        assert refused.status_code == 429 and "Profile limit reached: 1 profile run per hour" in text
        assert "test and ranked uploads are not affected" in text
        assert client.post(reverse("upload"), {**data, "mode": "test"}).status_code == 302
    assert Submission.objects.filter(user=owner, mode="profile").count() == 1
