"""The Python runtime inside the box.

Two ways, both code in the project:
- local (no registry needed, CI and development): an almost empty image made with `docker import`
  from a tiny tar (a few directories, passwd/group), plus read-only binds of the host's Python
  runtime (/usr, the base interpreter's prefix, the virtualenv) and of `evaluator/` only.
  bwrap uses the same binds.
- production GPU hosts: the image built from sandbox/Dockerfile (`python -m sandbox build-image`)
  and named by SANDBOX_IMAGE; it carries its own Python, torch, triton and evaluator/.
"""
from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
from pathlib import Path

from .box import EVALUATOR_ROOT, GROUP, LABEL, PASSWD, Bind, Runtime
from .errors import SandboxError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = Path(__file__).resolve().parent / "Dockerfile"
REPOSITORY = "kernelboard-sandbox"
VENV_INSIDE = "/opt/venv"
# Top-level host directories that hold the dynamic loader, libc, the compiler and the shells.
# On merged-/usr systems all but /usr are symlinks and are recreated as symlinks.
SYSTEM_TOPS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Not secret, needed by the loader and by `cc`/`c++` (Debian alternatives). Nothing else of /etc.
ETC_FILES = ("/etc/ld.so.cache", "/etc/alternatives")
PYTHON_LABEL = "kernelboard.python"


def evaluator_source() -> Path:
    return PROJECT_ROOT / "evaluator"


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def host_runtime() -> Runtime:
    """Read-only binds that make this host's interpreter (and its venv) work inside the box."""
    binds = [Bind("/usr", "/usr")]
    symlinks = []
    for top in SYSTEM_TOPS:
        if os.path.islink(top):
            symlinks.append((top, os.readlink(top)))
        elif os.path.isdir(top):
            binds.append(Bind(top, top))
    bound = ["/usr"] + [b.source for b in binds]
    base = os.path.realpath(sys.base_prefix)
    if not _under(base, bound):
        binds.append(Bind(base, base))
        bound.append(base)
    prefix = os.path.realpath(sys.prefix)
    executable = os.path.abspath(sys.executable)
    if prefix != base:
        # the venv goes to a neutral path, so that the project that holds it stays outside
        rel = os.path.relpath(executable, sys.prefix)
        if rel.startswith(".."):
            raise SandboxError(f"{sys.executable} is not inside its venv {sys.prefix}")
        binds.append(Bind(prefix, VENV_INSIDE))
        python = f"{VENV_INSIDE}/{rel}"
    else:
        if not _under(executable, bound):
            raise SandboxError(f"the interpreter {executable} is outside {bound}")
        python = executable
    source = evaluator_source()
    if not (source / "__main__.py").is_file():
        raise SandboxError(f"{source} holds no evaluator package")
    binds.append(Bind(str(source), f"{EVALUATOR_ROOT}/evaluator"))
    for path in ETC_FILES:
        if os.path.exists(path):
            binds.append(Bind(path, path))
    return Runtime(python=python, binds=tuple(binds), symlinks=tuple(symlinks))


SBIN_TOOLS = ("ldconfig", "ldconfig.real")  # Ubuntu's ldconfig is a script that runs ldconfig.real


def local_image_tar(runtime: Runtime) -> bytes:
    """Deterministic tiny root filesystem: mount points, passwd/group, the /lib-style symlinks."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        def add_dir(name, mode=0o755):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 0
            tar.addfile(info)

        def add_file(name, text):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))

        links = dict(runtime.symlinks)
        # Docker mounts its init at /sbin/docker-init, so /sbin stays a real directory; what
        # programs run by its /sbin path (Triton and ctypes.util run `/sbin/ldconfig -p` to find
        # libcuda) links into the bound /usr/sbin
        if links.pop("/sbin", None) is not None:
            for tool in SBIN_TOOLS:
                if os.path.exists(f"/usr/sbin/{tool}"):
                    links[f"/sbin/{tool}"] = f"/usr/sbin/{tool}"
        for name in ("dev", "etc", "opt", "out", "proc", "sbin", "submission", "sys", "usr"):
            add_dir(name)
        add_dir("tmp", 0o1777)
        add_file("etc/passwd", PASSWD)
        add_file("etc/group", GROUP)
        for target, text in sorted(links.items()):
            info = tarfile.TarInfo(target.lstrip("/"))
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, text, 0
            tar.addfile(info)
    return buf.getvalue()


def local_image(client, runtime: Runtime) -> str:
    """The local image's tag, importing it on first use (no registry involved)."""
    import docker.errors

    data = local_image_tar(runtime)
    tag = "local-" + hashlib.sha256(data).hexdigest()[:12]
    name = f"{REPOSITORY}:{tag}"
    try:
        client.images.get(name)
        return name
    except docker.errors.ImageNotFound:
        pass
    try:
        client.api.import_image_from_data(data, repository=REPOSITORY, tag=tag,
                                          changes=[f'LABEL {LABEL}="local"'])
        client.images.get(name)
    except docker.errors.DockerException as exc:
        raise SandboxError(f"could not import the local sandbox image: {exc}") from exc
    return name


def docker_runtime(client) -> Runtime:
    """SANDBOX_IMAGE (a built production image) when set, else the local image + host binds."""
    import docker.errors

    name = os.environ.get("SANDBOX_IMAGE", "").strip()
    if not name:
        runtime = host_runtime()
        return Runtime(python=runtime.python, binds=runtime.binds, symlinks=runtime.symlinks,
                       image=local_image(client, runtime))
    try:
        image = client.images.get(name)
    except docker.errors.ImageNotFound:
        raise SandboxError(f"SANDBOX_IMAGE={name} is not on this host; run `python -m sandbox build-image`") from None
    except docker.errors.DockerException as exc:
        raise SandboxError(f"could not inspect {name}: {exc}") from exc
    python = (image.labels or {}).get(PYTHON_LABEL)
    if not python:
        raise SandboxError(f"{name} has no {PYTHON_LABEL} label: build it from sandbox/Dockerfile")
    env = dict(item.partition("=")[::2] for item in (image.attrs.get("Config") or {}).get("Env") or [])
    return Runtime(python=python, image=name, path=env.get("PATH", ""))


def build_context() -> bytes:
    """The build context: the Dockerfile and evaluator/ only, never the rest of the project."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(DOCKERFILE, arcname="Dockerfile")
        source = evaluator_source()
        for path in sorted(source.rglob("*")):
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            tar.add(path, arcname=str(Path("evaluator") / path.relative_to(source)), recursive=False)
    return buf.getvalue()


def build_image(client, tag: str | None = None) -> str:
    import docker.errors

    context = build_context()
    tag = tag or f"{REPOSITORY}:{hashlib.sha256(context).hexdigest()[:12]}"
    try:
        client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag, rm=True,
                            labels={LABEL: "image"})
    except docker.errors.DockerException as exc:
        raise SandboxError(f"building {tag} failed: {exc}") from exc
    return tag
