"""evaluator/judge/startup.py: `prepare` returns the setup (startup.Setup) instead of setting it on
the evaluation, and a setup that fails removes the temporary cache it made (nothing else would)."""
import os
import shutil

import pytest

from evaluator.judge import startup
from evaluator.judge.evaluation import Evaluation
from evaluator.wire import workdir


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A judge without a persistent cache (a temporary one per evaluation); the cache variables
    prepare sets for the judge's compiles are restored afterwards."""
    monkeypatch.setattr(startup, "judge_cache_dir", lambda: None)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    made = []
    real = startup.tempfile.mkdtemp

    def mkdtemp(**kw):
        made.append(real(**kw))
        return made[-1]

    monkeypatch.setattr(startup.tempfile, "mkdtemp", mkdtemp)
    yield made
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def test_prepare_returns_the_setup_and_sets_nothing_on_the_evaluation(own_cache):
    ev = Evaluation(b"def custom_kernel(x):\n    return x\n", task="softmax", device="cpu", mode="test")
    setup = startup.prepare(ev)
    try:
        assert isinstance(setup, startup.Setup) and ev.setup is None
        assert setup.task.name == "softmax" and setup.cache == setup.tmp_cache == own_cache[0]
        assert setup.caller.task is setup.task and setup.work.submission.exists()
        # the public test shapes, then those drawn under this evaluation's seed
        public = [dict(s) for s in setup.task.test_shapes]
        assert setup.test_shapes[:len(public)] == public and len(setup.test_shapes) > len(public)
        assert setup.test_shapes == setup.task.test_shapes_for(ev.derive(ev.master, "shapes"), "cpu")
        assert setup.small_shapes == sorted(setup.test_shapes, key=startup.shape_size)[:startup.SMALL_SHAPES_CPU]
        assert setup.probe is None and setup.ceilings is None  # test mode: nothing is timed
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == os.path.join(setup.cache, "inductor")
        assert "versions" in ev.report
    finally:
        setup.work.remove()


def test_a_failed_setup_removes_its_temporary_cache(own_cache, monkeypatch):
    def broken(source):
        raise OSError("no room for a work directory")

    monkeypatch.setattr(workdir, "Workdir", broken)
    ev = Evaluation(b"", task="softmax", device="cpu", mode="test")
    with pytest.raises(OSError, match="no room"):
        startup.prepare(ev)
    assert len(own_cache) == 1 and not os.path.exists(own_cache[0])


def test_ceilings_on_the_cpu_are_measured_not_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(startup.timing, "measure_ceilings", lambda device: {"device": device})
    assert startup.ceilings("cpu", str(tmp_path), None) == {"device": "cpu"}
    assert not list(tmp_path.iterdir())
