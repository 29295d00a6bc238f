"""The page cache: one build per fingerprint, the previous value while a rebuild runs."""
import threading
import time

from leaderboard.web.pagecache import cached


def test_the_first_build_happens_once_for_concurrent_requests():
    calls = []

    def build():
        calls.append(1)
        time.sleep(0.2)
        return "v1"

    results = []
    threads = [threading.Thread(target=lambda: results.append(cached("k", build, fingerprint="f1"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["v1"] * 8
    assert len(calls) == 1


def test_a_new_fingerprint_rebuilds_while_others_get_the_previous_value():
    assert cached("k", lambda: "old", fingerprint="f1") == "old"
    started, release = threading.Event(), threading.Event()

    def slow_build():
        started.set()
        release.wait(5)
        return "new"

    out = []
    rebuilder = threading.Thread(target=lambda: out.append(cached("k", slow_build, fingerprint="f2")))
    rebuilder.start()
    assert started.wait(5)
    assert cached("k", lambda: "must not build twice", fingerprint="f2") == "old"
    release.set()
    rebuilder.join()
    assert out == ["new"]
    assert cached("k", lambda: "must not build again", fingerprint="f2") == "new"


def test_a_failed_build_keeps_nothing():
    def boom():
        raise RuntimeError("no")

    try:
        cached("k2", boom, fingerprint="f1")
    except RuntimeError:
        pass
    assert cached("k2", lambda: "ok", fingerprint="f1") == "ok"


def test_a_value_is_rebuilt_at_most_every_min_interval(settings):
    settings.WEB_REBUILD_MIN_INTERVAL_S = 3600
    assert cached("k3", lambda: "first", fingerprint="f1") == "first"
    assert cached("k3", lambda: "second", fingerprint="f2") == "first"
    settings.WEB_REBUILD_MIN_INTERVAL_S = 0
    assert cached("k3", lambda: "second", fingerprint="f2") == "second"


def _slow(value):
    def build():
        time.sleep(0.05)
        return value
    return build


def test_a_slow_rebuild_stretches_the_interval_to_its_cost(settings, monkeypatch):
    """A value whose rebuild took 50 ms is rebuilt at most every REBUILD_COST_FACTOR x 50 ms (5 s),
    not every WEB_REBUILD_MIN_INTERVAL_S (0.1 s); a quick one keeps the minimum. The first build
    sets no pace (it pays for imports once), and the stretch stops at REBUILD_MAX_INTERVAL_S."""
    from leaderboard.web import pagecache

    settings.WEB_REBUILD_MIN_INTERVAL_S = 0.1
    monkeypatch.setattr(pagecache, "REBUILD_COST_FACTOR", 100)
    assert cached("slow", _slow("first"), fingerprint="f1") == "first"
    assert cached("quick", lambda: "first", fingerprint="f1") == "first"
    time.sleep(0.2)  # past the minimum interval: the slow first build did not stretch it
    assert cached("slow", _slow("second"), fingerprint="f2") == "second"
    assert cached("quick", lambda: "second", fingerprint="f2") == "second"
    time.sleep(0.2)  # past the minimum interval, inside the slow rebuild's 5 s
    assert cached("slow", _slow("third"), fingerprint="f3") == "second"
    assert cached("quick", lambda: "third", fingerprint="f3") == "third"
    monkeypatch.setattr(pagecache, "REBUILD_MAX_INTERVAL_S", 0.15)  # the cap, now past
    assert cached("slow", _slow("fourth"), fingerprint="f4") == "fourth"


def test_no_interval_means_no_cost_interval_either(settings):
    """Tests and operators that set the interval to 0 see every change at once, however long the
    build took."""
    settings.WEB_REBUILD_MIN_INTERVAL_S = 0
    assert cached("slow0", _slow("first"), fingerprint="f1") == "first"
    assert cached("slow0", _slow("second"), fingerprint="f2") == "second"
    assert cached("slow0", _slow("third"), fingerprint="f3") == "third"
