"""A GPU result names the GPU it ran on, by the host's index and its UUID (the judge's report,
from the box's EVALUATOR_HOST_GPU and the device itself): in the API, for the owner and anyone
its result is public to, and on its page."""
from __future__ import annotations

from leaderboard import services
from site_helpers import H200, make_queued, report_for

UUID = "GPU-6f1c2d3e-0a1b-4c5d-8e9f-0123456789ab"


def test_the_api_and_the_page_name_the_gpu(client, task, owner, other):
    report = report_for(task, speedup=1.3)
    report.update(gpu_index=1, gpu_uuid=UUID, gpus_visible=1)
    sub = make_queued(task, owner, device_type=H200)
    assert services.submission_store_result(
        submission=services.submission_claim(submission_id=sub.pk, worker="worker-gpu1@host"), report=report)
    _, key = services.api_token_create(user=other)
    body = client.get(f"/api/submissions/{sub.pk}", HTTP_AUTHORIZATION=f"Token {key}").json()  # a ranked entry
    assert (body["gpu_index"], body["gpu_uuid"], body["gpu_name"]) == (1, UUID, "NVIDIA H200")
    page = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "NVIDIA H200, GPU 1" in page and UUID in page


def test_a_cpu_result_names_no_gpu(client, task, owner):
    sub = make_queued(task, owner, device_type="cpu")
    assert services.submission_store_result(
        submission=services.submission_claim(submission_id=sub.pk, worker="w"),
        report=report_for(task, device="cpu", mode="test"))
    _, key = services.api_token_create(user=owner)
    body = client.get(f"/api/submissions/{sub.pk}", HTTP_AUTHORIZATION=f"Token {key}").json()
    assert body["gpu_index"] is None and body["gpu_uuid"] is None
    client.force_login(owner)  # a test run's page is its owner's
    assert "GPU " not in client.get(f"/submissions/{sub.pk}/").content.decode().split('id="device"')[1][:80]
