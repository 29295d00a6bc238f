"""`make test` as root in a checkout that other users cannot enter (a clone under root's 0700 home).

scripts/services.sh runs PostgreSQL as its own user (postgres, when run as root), so its data
directory must be one that user can reach: var/services/pg when it can enter the checkout, else a
private directory of its own under /var/tmp that `stop` removes. Each test runs the script's
`start pg` and `stop pg` on a port of its own, so no other checkout's services are touched."""
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")  # as tests/conftest.py reads it


def _pg_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                   key=lambda p: [int(x) if x.isdigit() else x for x in p.parts[-3].split(".")])
    return found[-1].parent if found else None


@pytest.fixture
def pg_as_root():
    if os.geteuid() != 0:
        pytest.skip("services.sh runs PostgreSQL as user postgres only when it runs as root")
    try:
        pwd.getpwnam("postgres")
        user = True
    except KeyError:
        user = False
    if _pg_bin() is None or not user:
        what = "PostgreSQL (its binaries under /usr/lib/postgresql and user postgres)"
        # as require() in tests/conftest.py: a missing service fails under CI=true
        if IN_CI:
            pytest.fail(f"{what} is required under CI=true but is not available")
        pytest.skip(f"{what} not available")
    return _pg_bin()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _checkout(parent: Path) -> Path:
    checkout = parent / "lb"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "services.sh", checkout / "scripts" / "services.sh")
    return checkout


def _services(checkout: Path, action: str, port: int) -> subprocess.CompletedProcess:
    # a Redis port of its own too, the same for start and stop, should a script start Redis as well
    env = {**os.environ, "TEST_PG_PORT": str(port), "TEST_REDIS_PORT": str(port + 1)}
    return subprocess.run(["scripts/services.sh", action, "pg"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=180)


def _answers(pg_bin: Path, port: int) -> bool:
    return subprocess.run([pg_bin / "pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)]).returncode == 0


def _as_postgres(*cmd: str) -> bool:
    return subprocess.run(["runuser", "-u", "postgres", "--", *cmd], cwd="/").returncode == 0


def _start_and_stop_in_locked_checkout(tmp_path: Path, pg_bin: Path, kill_first: bool) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    locked.chmod(0o700)
    checkout = _checkout(locked)
    assert not _as_postgres("test", "-x", str(locked)), "the directory must be closed to user postgres"
    port = _free_port()
    pointer = checkout / "var" / "services" / "pg-elsewhere"
    data = None
    try:
        out = _services(checkout, "start", port)
        assert out.returncode == 0, out.stderr
        assert f"export DATABASE_URL=postgres://postgres@127.0.0.1:{port}/" in out.stdout
        data = Path(pointer.read_text().strip())
        assert locked not in data.parents
        st = data.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (pwd.getpwnam("postgres").pw_uid, 0o700)
        assert _as_postgres("test", "-w", str(data / "PG_VERSION"))
        # said in one line where the data went
        assert [line for line in out.stderr.splitlines() if str(data) in line], out.stderr
        assert _answers(pg_bin, port)
        if kill_first:  # a server that died: stop still removes its data
            pid = int((data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 9)
    finally:
        stop = _services(checkout, "stop", port)
    assert stop.returncode == 0, stop.stderr
    assert not _answers(pg_bin, port)
    assert data is not None and not data.exists() and not pointer.exists()


def test_a_locked_checkout_keeps_postgres_data_where_its_user_reaches_it(tmp_path, pg_as_root):
    _start_and_stop_in_locked_checkout(tmp_path, pg_as_root, kill_first=False)


def test_stop_removes_the_data_of_a_server_that_died(tmp_path, pg_as_root):
    _start_and_stop_in_locked_checkout(tmp_path, pg_as_root, kill_first=True)


def test_an_open_checkout_keeps_its_data_under_var_services(pg_as_root):
    # pytest's tmp_path is under root's own 0700 directory: this checkout is in one all may enter
    parent = Path(tempfile.mkdtemp(prefix="lb-open-checkout-"))
    try:
        parent.chmod(0o755)
        checkout = _checkout(parent)
        port = _free_port()
        try:
            out = _services(checkout, "start", port)
            assert out.returncode == 0, out.stderr
            assert (checkout / "var" / "services" / "pg" / "PG_VERSION").is_file()
            assert not (checkout / "var" / "services" / "pg-elsewhere").exists()
            assert _answers(pg_as_root, port)
        finally:
            stop = _services(checkout, "stop", port)
        assert stop.returncode == 0, stop.stderr
        assert not _answers(pg_as_root, port)
        # the data stays in the checkout for the next start, as it always has
        assert (checkout / "var" / "services" / "pg" / "PG_VERSION").is_file()
    finally:
        shutil.rmtree(parent, ignore_errors=True)
