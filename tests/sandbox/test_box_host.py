"""What the box tells about the host, on both backends, through one real evaluation each (test
mode, the honest softmax): the stored report names the box that ran it, written by the host after
the box exited; and /proc/self/mountinfo, read by the submission, names no host path of the
checkout, the venv, the base interpreter or the run's work directory as a mount point, and the run's
work directory as the source of no mount but the judge's output directory (and, under Docker, the
upload's)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import sandbox
from evaluator import validate_report
from sandbox import box, bwrap_backend, docker_backend, image
from sandbox.box import Outcome

from sandbox_helpers import HONEST, LIMITS, UNCLEAN, evaluate, everything

pytestmark = pytest.mark.slow

PROBE = r"""
import sys
for line in open("/proc/self/mountinfo").read().splitlines():
    print("MOUNT", line, flush=True)
print("PREFIX", sys.prefix, sys.base_prefix, sys.executable, flush=True)
""" + HONEST


def mounts(result) -> list[tuple[str, str]]:
    """(root, mount point) of every line of mountinfo the submission printed: fields 4 and 5."""
    found = []
    for text in (result.report.to_json().get("logs", ""), result.logs):
        for line in text.splitlines():
            if line.startswith("MOUNT "):
                fields = line.split()
                found.append((fields[4], fields[5]))
    return found


def host_paths() -> list[str]:
    """The host's own directories that the box must not show as mount points."""
    paths = {str(image.PROJECT_ROOT), os.path.realpath(sys.prefix), os.path.abspath(sys.prefix),
             os.path.join(os.environ.get("SANDBOX_WORK_DIR") or tempfile.gettempdir(), box.WORK_PREFIX)}
    base = os.path.realpath(sys.base_prefix)
    if not base.startswith("/usr/") and base != "/usr":  # a pyenv under a home directory
        paths.add(base)
    home = os.path.expanduser("~")
    if home not in ("/", "/root"):
        paths.add(home)
    return sorted(paths)


@pytest.fixture(scope="module")
def seen(backend):
    result = evaluate(backend, PROBE)
    assert not set(result.report.to_json()["reason_codes"]) & UNCLEAN, everything(result)[-3000:]
    return backend, result


def test_the_report_names_the_box_that_ran_it(seen):
    backend, result = seen
    recorded = result.report.to_json()["box"]
    if backend == "bwrap":
        out = subprocess.run([shutil.which("bwrap"), "--version"], capture_output=True, text=True).stdout
        assert recorded == {"backend": "bubblewrap", "version": out.split()[-1], "image": None, "image_id": None}
    else:
        engine = docker_backend.client()
        assert recorded["backend"] == "docker"
        assert recorded["version"] == engine.version()["Version"]
        assert recorded["image"].startswith(image.REPOSITORY + ":local-")
        assert recorded["image_id"] == engine.images.get(recorded["image"]).id
    # the stored report keeps it: the site validates the report again before storing it
    assert validate_report(json.loads(json.dumps(result.report.to_json())))["box"] == recorded


def test_mountinfo_names_no_host_directory_as_a_mount_point(seen):
    backend, result = seen
    found = mounts(result)
    assert len(found) > 5, everything(result)[-3000:]
    targets = [target for _, target in found]
    assert image.VENV_INSIDE in targets and "/out" in targets
    for path in host_paths():
        assert not [t for t in targets if t == path or t.startswith(path.rstrip("/") + "/")
                    or path in t], (path, targets)
    # the interpreter runs from the box's own paths, and says none of the host's
    prefix = next(line for line in result.report.to_json()["logs"].splitlines() if line.startswith("PREFIX "))
    assert prefix.split()[1] == image.ENV_INSIDE and prefix.split()[3].startswith(image.ENV_INSIDE + "/bin/")
    assert not [p for p in host_paths() if p in prefix], prefix


def test_mountinfo_names_the_work_directory_only_as_the_source_of_out(seen):
    """A bind mount's root field is its source's path within the host filesystem: the judge's
    output directory is bound from the run's work directory (and, under Docker, the upload too);
    everything else bwrap gives the box as bytes (passwd, group, pyvenv.cfg, the upload, the /proc
    masks) shows no host path."""
    backend, result = seen
    work = os.path.join(os.environ.get("SANDBOX_WORK_DIR") or tempfile.gettempdir(), box.WORK_PREFIX)
    from_work = sorted(target for root, target in mounts(result) if root.startswith(work))
    assert from_work == (["/out"] if backend == "bwrap" else ["/out", "/submission"]), mounts(result)


def test_the_host_writes_the_box_over_whatever_the_report_file_says(monkeypatch, bwrap_ready):
    """The box field is the host's: a report file that names a box (the judge writes none) is
    overwritten with what the backend that ran it says."""
    def run(made):
        report = validate_report(json.loads(json.dumps(sandbox.result.rejected(
            task="softmax", mode="test", device="cpu", reason="x", code="crash", logs="").to_json())))
        report["box"] = {"backend": "docker", "version": "forged", "image": "forged", "image_id": None}
        (made.out_dir / "report.json").write_text(json.dumps(report))
        return Outcome(exit_code=0, timed_out=False, oom_killed=False, logs="", wall_s=0.1,
                       payload_s=0.1, box=bwrap_backend.describe())

    monkeypatch.setattr(bwrap_backend, "run", run)
    result = sandbox.evaluate(source=b"x = 1\n", task="softmax", mode="test", device="cpu",
                              backend="bwrap", limits=LIMITS)
    assert result.report.to_json()["box"] == bwrap_backend.describe()
    assert result.report.to_json()["box"]["backend"] == "bubblewrap"


@pytest.mark.django_db
def test_the_result_page_says_which_box_ran_it(seen, client, task, owner):
    from django.urls import reverse

    from leaderboard import services
    from leaderboard.models import Submission

    backend, result = seen
    sub = Submission.objects.create(user=owner, task=task, mode="test", device_type="cpu",
                                    source=HONEST, filename="softmax.py", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=result.report, logs=result.logs)
    assert Submission.objects.get(pk=sub.pk).report["box"] == result.report.to_json()["box"]
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    recorded = result.report.to_json()["box"]
    if backend == "bwrap":
        assert f'<dt>Sandbox</dt><dd id="box">bubblewrap {recorded["version"]}</dd>' in html
    else:
        line = f'Docker {recorded["version"]}, image {recorded["image"]} ({recorded["image_id"][:19]})'
        assert f'<dt>Sandbox</dt><dd id="box">{line}</dd>' in html
