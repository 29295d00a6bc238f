"""The Docker backend: one throwaway container per evaluation, through the docker SDK.

The container's main process is the trusted judge (root inside, with only CAP_SETUID,
CAP_SETGID and CAP_KILL, no-new-privileges, read-only root); the judge starts the submission's
runner as uid 65534 with no capabilities. See docs/sandbox.md.
"""
from __future__ import annotations

import datetime
import os
import threading
import time

from .seccomp import docker_profile
from .box import LABEL, OUT_DIR, SUBMISSION_DIR, TASKS_DIR, Box, Outcome, truncate_text
from .errors import SandboxError
from .limits import narrowed_cores

NAME = "docker"
JUDGE_CAPS = ["SETUID", "SETGID", "KILL"]
DEADLINE_LABEL = "kernelboard.deadline"
RUN_LABEL = "kernelboard.run"
# The json-file log is rotated in place at this size, so a flood of output costs no disk.
LOG_MAX = "1m"
API_TIMEOUT_S = 60

_client = None
_client_lock = threading.Lock()


def client():
    global _client
    with _client_lock:
        if _client is None:
            import docker

            try:
                _client = docker.from_env(timeout=API_TIMEOUT_S)
            except docker.errors.DockerException as exc:
                raise SandboxError(f"no Docker engine answers: {exc}") from exc
        return _client


def unavailable_reason() -> str | None:
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker Python package is not installed (pip install docker)"
    try:
        client().ping()
    except Exception as exc:  # any failure to reach the engine means "not available"
        global _client
        _client = None
        return f"no Docker engine answers ({exc.__class__.__name__}); install docker.io and start dockerd"
    return None


def nvidia_runtime() -> bool:
    try:
        return "nvidia" in (client().info().get("Runtimes") or {})
    except Exception:
        return False


def create_kwargs(box: Box) -> dict:
    from docker.types import DeviceRequest, LogConfig, Mount, Ulimit

    limits = box.limits
    mounts = [Mount(b.target, b.source, type="bind", read_only=b.read_only) for b in box.runtime.binds]
    mounts += [
        Mount(SUBMISSION_DIR, str(box.submission_dir), type="bind", read_only=True),
        Mount(OUT_DIR, str(box.out_dir), type="bind", read_only=False),
    ]
    if box.task_files:
        # the site's task definitions: read-only, so nothing in the box changes what it judges by
        mounts.append(Mount(TASKS_DIR, str(box.tasks_dir), type="bind", read_only=True))
    if box.gpu:
        # with the NVIDIA runtime (docker_request) the plan holds only the tools' installs
        mounts += [Mount(b.target, b.source, type="bind", read_only=True) for b in box.gpu.lib_binds]
    kwargs = dict(
        image=box.runtime.image,
        command=list(box.argv),
        user="0:0",
        working_dir="/tmp",
        environment=dict(box.env),
        hostname="sandbox",
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={limits.tmpfs_bytes},mode=1777"},
        shm_size=limits.shm_bytes,
        ipc_mode="private",
        cap_drop=["ALL"],
        cap_add=list(JUDGE_CAPS),
        # the box's seccomp policy (sandbox/seccomp.py) in place of Docker's default profile
        security_opt=["no-new-privileges", "seccomp=" + docker_profile()],
        pids_limit=limits.pids,
        mem_limit=limits.memory_bytes,
        memswap_limit=limits.memory_bytes,
        nano_cpus=int(limits.effective_cpus() * 1e9),
        # a container starts under the engine, not the worker: it inherits none of the worker's
        # CPU affinity, which bubblewrap's box does by being the worker's child
        cpuset_cpus=narrowed_cores(),
        ulimits=[Ulimit(name="nofile", soft=limits.nofile, hard=limits.nofile),
                 Ulimit(name="core", soft=0, hard=0)],
        mounts=mounts,
        labels={LABEL: "1", DEADLINE_LABEL: box.run_id.split("-")[0], RUN_LABEL: box.run_id},
        log_config=LogConfig(type="json-file", config={"max-size": LOG_MAX, "max-file": "1"}),
        init=True,  # reaps orphans; the judge is not pid 1
        stdin_open=False,
        tty=False,
        auto_remove=False,
    )
    if os.geteuid() != 0:
        # out/ is 0770 and owned by the worker: the judge enters it through the worker's group
        kwargs["group_add"] = [str(os.getegid())]
    if box.gpu:
        if box.gpu.docker_request:
            kwargs["device_requests"] = [DeviceRequest(device_ids=[str(box.gpu.index)],
                                                       capabilities=[["gpu"]])]
        else:
            kwargs["devices"] = [f"{n}:{n}:rwm" for n in box.gpu.device_nodes]
    return kwargs


def describe(box: Box, image_id: str | None) -> dict:
    """The report's `box` for a run in this backend: the engine's version, the image by tag and id."""
    try:
        version = (client().version() or {}).get("Version")
    except Exception:  # the run itself is over: a version that cannot be read is left null
        version = None
    return {"backend": "docker", "version": str(version)[:64] if version else None,
            "image": box.runtime.image, "image_id": image_id}


def _parse_time(text: str) -> float | None:
    if not text or text.startswith("0001-"):
        return None
    head, _, frac = text.rstrip("Z").partition(".")
    frac = (frac + "000000")[:6]
    try:
        moment = datetime.datetime.fromisoformat(f"{head}.{frac}+00:00")
    except ValueError:
        return None
    return moment.timestamp()


def run(box: Box) -> Outcome:
    import docker.errors
    import requests.exceptions

    engine = client()
    started = time.monotonic()
    container = None
    timed_out = False
    try:
        try:
            container = engine.containers.create(**create_kwargs(box))
            container.start()
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not start the sandbox container: {exc}") from exc
        run_started = time.monotonic()
        remaining = box.limits.time_limit_s - (run_started - started)
        try:
            container.wait(timeout=max(1.0, remaining))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            timed_out = True
            try:
                container.kill()
            except docker.errors.APIError:
                pass  # it ended on its own in the meantime
            container.wait(timeout=API_TIMEOUT_S)
        try:
            container.reload()
            state = container.attrs["State"]
            raw_logs = container.logs(stdout=True, stderr=True)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"could not read the sandbox container's state: {exc}") from exc
        image_id = container.attrs.get("Image") or None
        begin, end = _parse_time(state.get("StartedAt")), _parse_time(state.get("FinishedAt"))
        payload = (end - begin) if begin and end and end >= begin else time.monotonic() - run_started
    except (requests.exceptions.RequestException, docker.errors.DockerException) as exc:
        raise SandboxError(f"the Docker engine failed during the run: {exc}") from exc
    finally:
        if container is not None:
            _remove(container)
    return Outcome(
        exit_code=None if timed_out else state.get("ExitCode"),
        timed_out=timed_out,
        oom_killed=bool(state.get("OOMKilled")),
        logs=truncate_text(raw_logs, box.limits.log_bytes),
        wall_s=time.monotonic() - started,
        payload_s=payload,
        box=describe(box, image_id),
    )


def _remove(container) -> None:
    import docker.errors

    for attempt in range(3):
        try:
            container.remove(force=True, v=True)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            if attempt == 2:
                raise SandboxError(f"could not remove container {container.id[:12]}; "
                                   "`python -m sandbox cleanup` will") from None
            time.sleep(0.2)
