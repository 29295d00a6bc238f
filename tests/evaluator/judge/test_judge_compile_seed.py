"""The candidate runner starts with a copy of the judge's torch.compile caches (so a torch.compile
submission runs the kernels the baseline runs), and the copy cannot reach outside its scratch."""
import json
import os
import shutil
import tempfile

from evaluator.judge import compile_seed
from evaluator.wire import workdir
from evaluator.judge.evaluation import Evaluation


# The copy is made before the submission is imported, so these submissions end the evaluation at
# their import (import_error); the baselines compile beside the correctness phase
# (EVALUATOR_OVERLAP_COMPILE=1), so that compile, cold in a new judge cache, is cut short with it.
FAIL_AT_IMPORT = "\ndef custom_kernel(x):\n    return x\n\nraise ImportError('seen enough')\n"


def test_the_runner_sees_the_judge_autotuning_picks(tmp_path, monkeypatch):
    # a judge cache (named explicitly) that already holds one pick; on a GPU the baseline's own
    # compile adds more (the CPU's C++ backend benchmarks nothing, so it writes none)
    monkeypatch.setenv("EVALUATOR_OVERLAP_COMPILE", "1")
    cache = tmp_path / "judge"
    pick = cache / "inductor" / "ab" / "cabc123.best_config"
    pick.parent.mkdir(parents=True)
    pick.write_text('{"XBLOCK": 8, "num_warps": 4, "num_stages": 1}')
    (cache / "inductor" / "ab" / "cabc123.py").write_text("# compiled code: not copied")
    os.chmod(cache, 0o700)  # the judge uses only a directory closed to everyone else
    monkeypatch.setenv("EVALUATOR_JUDGE_CACHE", str(cache))
    log_dir = tempfile.mkdtemp(prefix="evaluator-seed-")
    os.chmod(log_dir, 0o777)
    seen = os.path.join(log_dir, "seen.json")
    # the submission lists what its own inductor cache holds when it is imported
    source = ("import os as _os, json as _json\n"
              "_top = _os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
              "_files = {_os.path.relpath(_os.path.join(d, f), _top): open(_os.path.join(d, f)).read()\n"
              "          for d, _, fs in _os.walk(_top) for f in fs}\n"
              f"with open({seen!r}, 'w') as _f:\n    _json.dump(_files, _f)\n" + FAIL_AT_IMPORT)
    try:
        ev = Evaluation(source.encode(), task="softmax", device="cpu", mode="ranked")
        report = ev.run()
        with open(seen) as f:
            files = json.load(f)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    assert ev.setup.cache == str(cache)
    assert "import_error" in report["reason_codes"], report["reasons"]
    assert "copied" in report["compile_cache"], report["compile_cache"]
    # the pick, at the same place relative to the runner's own cache; the compiled code is not
    assert files.get("ab/cabc123.best_config") == pick.read_text(), files
    assert "ab/cabc123.py" not in files


def test_no_copy_when_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_OVERLAP_COMPILE", "1")
    monkeypatch.setenv("EVALUATOR_COMPILE_SEED", "0")
    report = Evaluation(FAIL_AT_IMPORT.encode(), task="softmax", device="cpu", mode="ranked").run()
    assert "import_error" in report["reason_codes"], report["reasons"]
    assert report["compile_cache"].startswith("off"), report["compile_cache"]


def test_test_mode_copies_nothing(evaluate, honest):
    report = evaluate(honest, mode="test")
    assert report["compile_cache"] == ""


def test_read_tree_skips_links_and_gives_up_over_the_cap(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    (cache / "inductor" / "ab").mkdir(parents=True)
    (cache / "triton").mkdir()
    (cache / "inductor" / "ab" / "k.py").write_text("kernel")
    (cache / "inductor" / "ab" / "k.best_config").write_text("{}")
    (cache / "triton" / "t.best_config").write_text("{}")
    (cache / "inductor" / "ab" / "m.so").write_bytes(b"\x7fELF\x02\x01")
    (cache / "ceilings-x.json").write_text("not a compile cache")
    secret = tmp_path / "secret"
    secret.write_text("judge only")
    os.symlink(secret, cache / "inductor" / "link.best_config")
    files, note = compile_seed.read_tree(str(cache))
    assert note == ""
    # picks only: no compiled code, no Triton cache (a copied launcher crashed the runner)
    assert [rel for rel, _ in files] == ["inductor/ab/k.best_config"]
    monkeypatch.setattr(compile_seed, "MAX_BYTES", 1)
    files, note = compile_seed.read_tree(str(cache))
    assert files == [] and "not copied" in note


def test_write_tree_stays_inside_the_scratch(tmp_path):
    dest = tmp_path / "scratch"
    dest.mkdir()
    compile_seed.write_tree(str(dest), [("inductor/a.py", b"1"), ("../escaped", b"2"),
                                        ("/etc/evil", b"3"), ("triton/../../x", b"4")])
    assert (dest / "inductor" / "a.py").read_bytes() == b"1"
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "x").exists()
    assert sorted(p.name for p in dest.rglob("*") if p.is_file()) == ["a.py"]


def test_the_copy_belongs_to_the_runner(tmp_path):
    cache = tmp_path / "cache"
    (cache / "inductor").mkdir(parents=True)
    (cache / "inductor" / "k.best_config").write_text("{}")
    work = workdir.Workdir(b"")
    try:
        note = compile_seed.seed(work, str(cache))
        assert note.startswith("1 files"), note
        st = os.stat(work.scratch / "inductor" / "k.best_config")
        assert st.st_uid == work.uid and st.st_mode & 0o077 == 0
    finally:
        work.remove()
