"""Processes as /proc shows them (evaluator/wire/procinfo.py): a process's descendants (a child in
a session of its own included), its parent, its threads, and one line per process of a session
with where its threads wait. Real processes of this test's own, a second or so each."""
import os
import subprocess
import sys
import threading
import time

import pytest

from evaluator.wire import procinfo


@pytest.fixture
def family():
    """A child in a new session that starts a grandchild; both sleep until killed."""
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, time; "
                              "subprocess.Popen(['sleep', '60']); print('up', flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert child.stdout.readline().strip() == "up"
    yield child
    os.killpg(child.pid, 9)
    child.wait()


def test_descendants_walk_the_tree_below_the_root_only():
    parents = {1: (0, 1), 10: (1, 10), 11: (10, 10), 12: (11, 12), 20: (1, 20)}
    assert sorted(procinfo.descendants(10, parents)) == [10, 11, 12]
    assert procinfo.descendants(12, parents) == [12]


def test_a_child_in_a_session_of_its_own_is_still_a_descendant(family):
    tree = procinfo.descendants(os.getpid())
    assert family.pid in tree
    [grandchild] = [p for p in procinfo.descendants(family.pid) if p != family.pid]
    assert grandchild in tree
    assert procinfo.parent(family.pid) == os.getpid()
    assert procinfo.parent(grandchild) == family.pid


def test_a_process_that_is_gone_has_no_parent_and_no_threads():
    p = subprocess.Popen(["true"])
    p.wait()
    assert procinfo.parent(p.pid) == -1
    assert procinfo.threads([p.pid]) == []
    assert procinfo.thread_names([p.pid]) == []


def test_threads_and_their_names_are_read_for_each_thread():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        tids = procinfo.threads([os.getpid()])
        assert os.getpid() in tids and t.native_id in tids
        assert len(procinfo.thread_names([os.getpid()])) == len(tids)
    finally:
        stop.set()
        t.join()


def test_a_session_is_one_line_per_process_with_where_it_waits(family):
    lines = procinfo.session(family.pid).splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"pid {family.pid} ({sys.executable} -c")
    [grandchild] = [p for p in procinfo.descendants(family.pid) if p != family.pid]
    assert any(line.startswith(f"pid {grandchild} (") for line in lines), lines
    assert all(" sys=" in line for line in lines)


def test_a_command_line_with_newlines_stays_on_its_line():
    """The submission chooses its command line: a newline in it must not write a line of its own
    into the operator's log."""
    # argv[0] "python", not the interpreter's path: the session line keeps a command's first 90
    # characters, and a checkout under a long path would cut the forged line short
    child = subprocess.Popen(["python", "-c", "import time; time.sleep(30)", "x\npid 1 (forged): R", "\x1b[2J"],
                             executable=sys.executable, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while "forged" not in procinfo.session(child.pid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        text = procinfo.session(child.pid)
        assert len(text.splitlines()) == 1 and "\x1b" not in text, text
        assert text.startswith(f"pid {child.pid} (") and "x pid 1 (forged): R" in text
    finally:
        child.kill()
        child.wait()
