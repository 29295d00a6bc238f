"""evaluator/runner/sanitize_child.py: the sanitizer's target needs a CUDA device. Here (no GPU) its
command line still refuses missing arguments, and a full command fails while building the inputs
on "cuda", before the submission is imported."""
import pytest
import torch

from evaluator.runner import sanitize_child


def test_the_command_line_needs_every_argument(capsys):
    with pytest.raises(SystemExit) as e:
        sanitize_child.main(["--task", "softmax", "--source", "s.py", "--shape", "{}"])
    assert e.value.code == 2 and "--seed" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sanitize_child.main(["--task", "softmax", "--source", "s.py", "--shape", "{}", "--seed", "x"])


def test_an_unknown_task_is_refused_before_the_submission_is_read(tmp_path):
    marker = tmp_path / "imported"
    source = tmp_path / "s.py"
    source.write_text(f"open({str(marker)!r}, 'w').close()\ndef custom_kernel(x):\n    return x\n")
    with pytest.raises(KeyError, match="unknown task 'nope'"):
        sanitize_child.main(["--task", "nope", "--source", str(source), "--shape", "{}", "--seed", "1"])
    assert not marker.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the call would run")
def test_without_a_gpu_the_inputs_cannot_be_built_and_the_submission_is_not_imported(tmp_path):
    marker = tmp_path / "imported"
    source = tmp_path / "s.py"
    source.write_text(f"open({str(marker)!r}, 'w').close()\ndef custom_kernel(x):\n    return x\n")
    with pytest.raises((RuntimeError, AssertionError), match="CUDA|cuda|NVIDIA|driver"):
        sanitize_child.main(["--task", "softmax", "--source", str(source), "--shape", '{"M": 2, "N": 8}',
                             "--seed", "1"])
    assert not marker.exists()
