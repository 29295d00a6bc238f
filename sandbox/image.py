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

import dataclasses
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
VENV_INSIDE = "/opt/venv"  # the host's venv, bound whole
PYTHON_INSIDE = "/opt/python"  # a base interpreter's prefix that is not under /usr
ENV_INSIDE = "/opt/env"  # the interpreter's prefix (sys.prefix) inside: made for the box
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
    """Read-only binds that make this host's interpreter (and its venv) work inside the box.

    No mount inside the box sits at a host-specific path: the venv is bound at /opt/venv, a base
    interpreter outside the system directories (pyenv's, under a home directory) at /opt/python,
    the evaluator at /opt/kernelboard/evaluator. The interpreter's prefix in the box is /opt/env:
    a pyvenv.cfg written for the box (its `home` in the box's paths, where the host's names the
    host's), links to the interpreter and links into /opt/venv for the packages."""
    binds = [Bind("/usr", "/usr")]
    symlinks = []
    for top in SYSTEM_TOPS:
        if os.path.islink(top):
            symlinks.append((top, os.readlink(top)))
        elif os.path.isdir(top):
            binds.append(Bind(top, top))
    bound = ["/usr"] + [b.source for b in binds]
    base = os.path.realpath(sys.base_prefix)
    base_inside, library_path = base, ""
    if not _under(base, bound):
        # at its own path it would name a host directory inside the box (mountinfo shows every
        # mount's path); its RUNPATH names its lib/ by that host path, so the loader is told instead
        binds.append(Bind(base, PYTHON_INSIDE))
        base_inside = PYTHON_INSIDE
        if os.path.isdir(os.path.join(base, "lib")):
            library_path = f"{PYTHON_INSIDE}/lib"

    def inside(path: str) -> str:
        if _under(path, [base]):
            return base_inside + path[len(base):]
        if _under(path, bound):
            return path
        raise SandboxError(f"the interpreter {path} is outside {bound + [base]}")

    files: list[tuple[str, str]] = []
    path = ""
    prefix = os.path.realpath(sys.prefix)
    if prefix != base:
        base_python = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
        python = _venv(prefix, inside(base_python), binds, symlinks, files)
        path = f"{ENV_INSIDE}/bin:{VENV_INSIDE}/bin"
    else:
        executable = os.path.abspath(sys.executable)
        if not _under(executable, [base]):
            executable = os.path.realpath(executable)
        python = inside(executable)
    source = evaluator_source()
    if not (source / "__main__.py").is_file():
        raise SandboxError(f"{source} holds no evaluator package")
    binds.append(Bind(str(source), f"{EVALUATOR_ROOT}/evaluator"))
    for etc in ETC_FILES:
        if os.path.exists(etc):
            binds.append(Bind(etc, etc))
    return Runtime(python=python, binds=tuple(binds), symlinks=tuple(symlinks), files=tuple(files),
                   path=path, library_path=library_path)


def _venv(prefix: str, base_python: str, binds: list, symlinks: list, files: list) -> str:
    """The host venv bound whole at /opt/venv, and the interpreter's prefix /opt/env in front of
    it (see host_runtime); the interpreter's path inside."""
    if not _under(os.path.abspath(sys.executable), [os.path.abspath(sys.prefix)]):
        raise SandboxError(f"{sys.executable} is not inside its venv {sys.prefix}")
    binds.append(Bind(prefix, VENV_INSIDE))
    for entry in sorted(os.listdir(prefix)):
        if entry in ("bin", "pyvenv.cfg") or entry.startswith("."):
            continue
        if os.path.isdir(os.path.join(prefix, entry)):  # lib, include, share; lib64 -> lib
            symlinks.append((f"{ENV_INSIDE}/{entry}", f"{VENV_INSIDE}/{entry}"))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    name = os.path.basename(sys.executable)
    for link in sorted({"python", "python3", version, name}):
        symlinks.append((f"{ENV_INSIDE}/bin/{link}", base_python))
    # the host's pyvenv.cfg names host paths (home, executable, command): only what says how the
    # venv behaves is kept
    kept = []
    try:
        with open(os.path.join(prefix, "pyvenv.cfg")) as f:
            for line in f:
                key = line.partition("=")[0].strip()
                if key in ("include-system-site-packages", "version", "version_info"):
                    kept.append(line.strip())
    except OSError:
        pass
    text = "\n".join([f"home = {os.path.dirname(base_python)}", *kept]) + "\n"
    files.append((f"{ENV_INSIDE}/pyvenv.cfg", text))
    return f"{ENV_INSIDE}/bin/{name}"


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
        made = {"dev", "etc", "opt", "out", "proc", "sbin", "submission", "sys", "usr", "tmp"}
        for target in sorted([*links, *(path for path, _ in runtime.files)]):
            parts = target.strip("/").split("/")[:-1]
            for i in range(len(parts)):
                parent = "/".join(parts[: i + 1])
                if parent not in made:
                    made.add(parent)
                    add_dir(parent)
        for target, text in sorted(runtime.files):
            add_file(target.lstrip("/"), text)
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
        return dataclasses.replace(runtime, image=local_image(client, runtime))
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
