"""evaluator/contract/progress.py: note() appends one JSON line per step to the file the variable
names (nothing without it), latest() reads back the last complete step line, words() writes it for
the site."""
import json

from evaluator.contract import progress


def test_note_writes_nothing_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALUATOR_PROGRESS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    progress.note("setup")
    assert list(tmp_path.iterdir()) == []


def test_note_appends_and_latest_reads_the_last_step(tmp_path, monkeypatch):
    path = tmp_path / "progress.jsonl"
    monkeypatch.setenv("EVALUATOR_PROGRESS_FILE", str(path))
    progress.note("setup")
    progress.note("correctness", k=2, n=6)
    lines = path.read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == ["setup", "correctness"]
    last = progress.latest(str(path))
    assert last["step"] == "correctness" and last["k"] == 2 and last["n"] == 6 and isinstance(last["t"], float)


def test_a_long_note_is_cut_to_one_line_of_max_line(tmp_path, monkeypatch):
    path = tmp_path / "p"
    monkeypatch.setenv("EVALUATOR_PROGRESS_FILE", str(path))
    progress.note("timing", detail="x" * 2000)
    [line] = path.read_text().splitlines()
    assert len(line) == progress.MAX_LINE


def test_latest_skips_a_torn_last_line_and_lines_that_are_not_steps(tmp_path):
    path = tmp_path / "p"
    path.write_text('{"step": "compile"}\n{"step": "timing", "shape": 1}\n["not", "a step"]\n{"step": 3}\n{"step": "verd')
    assert progress.latest(str(path)) == {"step": "timing", "shape": 1}
    assert progress.latest(str(tmp_path / "missing")) is None
    (tmp_path / "empty").write_text("")
    assert progress.latest(str(tmp_path / "empty")) is None


def test_latest_reads_only_the_tail_of_a_long_file(tmp_path):
    path = tmp_path / "p"
    path.write_text(json.dumps({"step": "setup"}) + "\n" + "x" * 10000 + "\n" + json.dumps({"step": "recheck"}) + "\n")
    assert progress.latest(str(path)) == {"step": "recheck"}
    path.write_text(json.dumps({"step": "setup"}) + "\n" + "x" * 10000 + "\n")
    assert progress.latest(str(path)) is None  # the only step line lies before the last 4 KiB


def test_words():
    assert progress.words({"step": "correctness", "k": 3, "n": 6}) == "correctness: shape 3 of 6"
    assert progress.words({"step": "correctness"}) == "correctness: shape "
    assert progress.words({"step": "timing", "shape": 1, "shapes": 2, "round": 4, "rounds_max": 40}) == \
        "timing: shape 1 of 2, round 4 (at most 40)"
    assert progress.words({"step": "compile"}) == "starting the runner and compiling"
    assert progress.words({"step": "verdict"}) == "deciding the verdict"
    assert progress.words({"step": "z" * 300}) == "z" * 120
