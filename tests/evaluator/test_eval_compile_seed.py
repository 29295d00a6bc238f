"""The candidate runner starts with a copy of the judge's torch.compile caches (so a torch.compile
submission runs the kernels the baseline runs), and the copy cannot reach outside its scratch."""
import json
import os
import shutil
import tempfile

from evaluator import compile_seed, isolation
from evaluator.judge import Evaluation


def _is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def test_the_runner_sees_the_judge_compile_cache(honest):
    log_dir = tempfile.mkdtemp(prefix="evaluator-seed-")
    os.chmod(log_dir, 0o777)
    seen = os.path.join(log_dir, "seen.json")
    # the submission lists what its own inductor cache holds when it is imported
    source = ("import os as _os, json as _json\n"
              "_top = _os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
              "_files = sorted(_os.path.relpath(_os.path.join(d, f), _os.path.dirname(_top))\n"
              "                for d, _, fs in _os.walk(_top) for f in fs)\n"
              f"with open({seen!r}, 'w') as _f:\n    _json.dump(_files, _f)\n" + honest)
    try:
        ev = Evaluation(source.encode(), task="softmax", device="cpu", mode="ranked")
        report = ev.run()
        with open(seen) as f:
            files = json.load(f)
        judge_files = {os.path.relpath(os.path.join(d, f), ev.cache)
                       for d, _, fs in os.walk(os.path.join(ev.cache, "inductor")) for f in fs
                       if not _is_elf(os.path.join(d, f))}
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    assert report["verdict"] != "rejected", report["reasons"]
    assert "copied" in report["compile_cache"], report["compile_cache"]
    # the baseline compiled softmax into the judge's cache; the runner found all of it (binaries
    # left out) in its own
    assert judge_files and judge_files <= set(files), (len(judge_files), len(files))


def test_test_mode_copies_nothing(evaluate, honest):
    report = evaluate(honest, mode="test")
    assert report["compile_cache"] == ""


def test_read_tree_skips_links_and_gives_up_over_the_cap(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    (cache / "inductor" / "ab").mkdir(parents=True)
    (cache / "triton").mkdir()
    (cache / "inductor" / "ab" / "k.py").write_text("kernel")
    (cache / "triton" / "t.json").write_text("{}")
    (cache / "inductor" / "ab" / "m.so").write_bytes(b"\x7fELF\x02\x01")
    (cache / "ceilings-x.json").write_text("not a compile cache")
    secret = tmp_path / "secret"
    secret.write_text("judge only")
    os.symlink(secret, cache / "triton" / "link")
    files, note = compile_seed.read_tree(str(cache))
    assert note == ""
    # the Triton cache and binaries stay the judge's (a copied launcher crashed the runner)
    assert sorted(rel for rel, _ in files) == ["inductor/ab/k.py"]
    monkeypatch.setattr(compile_seed, "MAX_BYTES", 5)
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
    (cache / "inductor" / "k.py").write_text("kernel")
    work = isolation.Workdir(b"")
    try:
        note = compile_seed.seed(work, str(cache))
        assert note.startswith("1 files"), note
        st = os.stat(work.scratch / "inductor" / "k.py")
        assert st.st_uid == work.uid and st.st_mode & 0o077 == 0
    finally:
        work.remove()
