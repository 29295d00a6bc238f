from pathlib import Path

import pytest

from evaluator import MAX_BYTES, check_signature, validate_source
from evaluator.contract.upload import check_upload

HONEST_SOFTMAX = Path(__file__).resolve().parents[1] / "fixtures" / "softmax_triton.py"


def test_it_accepts_the_honest_submission():
    assert validate_source(HONEST_SOFTMAX.read_text()) == []


def test_it_accepts_custom_kernel_bound_by_assignment_or_import():
    assert validate_source("import torch\ncustom_kernel = torch.softmax\n") == []
    assert validate_source("from torch import softmax as custom_kernel\n") == []
    assert validate_source("try:\n    def custom_kernel(x):\n        return x\nexcept Exception:\n    pass\n") == []


def test_it_rejects_non_utf8():
    assert check_upload(b"def custom_kernel(x):\n    return x  # \xff\n")[0][0] == "bad_upload"


def test_it_rejects_files_over_256_kib():
    big = "def custom_kernel(x):\n    return x\n" + "#" * MAX_BYTES
    [(code, message)] = check_upload(big)
    assert code == "bad_upload" and "256 KiB" in message


def test_it_rejects_syntax_errors_with_the_line():
    [(code, message)] = check_upload("def custom_kernel(x):\n    return (\n")
    assert code == "bad_upload" and "line" in message


def test_it_rejects_null_bytes():
    assert check_upload(b"def custom_kernel(x):\n    return x\x00\n")[0][0] == "bad_upload"


def test_it_requires_a_top_level_custom_kernel():
    assert check_upload("def other(x):\n    return x\n")[0][0] == "no_custom_kernel"
    nested = "def outer():\n    def custom_kernel(x):\n        return x\n"
    assert check_upload(nested)[0][0] == "no_custom_kernel"
    assert check_upload("x = 'custom_kernel'\n")[0][0] == "no_custom_kernel"


def test_the_package_import_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, evaluator; evaluator.validate_source('x=1'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


LAYERNORM = ("x", "weight", "bias")


@pytest.mark.parametrize("source", [
    "def custom_kernel(x, weight, bias):\n    return x\n",
    "def custom_kernel(x, w, b, eps=1e-5):\n    return x\n",  # names may differ; a default may follow
    "def custom_kernel(*inputs):\n    return inputs[0]\n",
    "def custom_kernel(x, *rest, **options):\n    return x\n",
    "def custom_kernel(x, /, weight, bias, *, eps=1e-5):\n    return x\n",
    "custom_kernel = lambda x, weight, bias: x\n",
    # what it accepts is known only by running it: never refused here
    "import functools\n\n@functools.cache\ndef custom_kernel(x):\n    return x\n",
    "import torch\ncustom_kernel = torch.layer_norm\n",
    "from torch import layer_norm as custom_kernel\n",
    "if True:\n    def custom_kernel(x):\n        return x\nelse:\n    def custom_kernel(x, w, b):\n        return x\n",
    "class custom_kernel:\n    def __init__(self, x):\n        pass\n",
    "def custom_kernel(:\n",  # check_upload's to say
])
def test_the_signature_check_passes_what_can_take_the_inputs(source):
    assert check_signature(source, LAYERNORM, "layernorm") == []


@pytest.mark.parametrize("source, written", [
    ("def custom_kernel(x):\n    return x\n", "(x)"),
    ("def custom_kernel():\n    return 0\n", "()"),
    ("def custom_kernel(a, b, bias, extra):\n    return a\n", "(a, b, bias, extra)"),
    ("def custom_kernel(x, weight, bias, *, eps):\n    return x\n", "(x, weight, bias, *, eps)"),
    ("def custom_kernel(x, weight=None):\n    return x\n", "(x, weight=...)"),
    ("custom_kernel = lambda x: x\n", "(x)"),
    (b"def custom_kernel(x, /, y):\n    return x\n", "(x, /, y)"),
])
def test_the_signature_check_names_what_the_task_passes_and_what_the_file_takes(source, written):
    [message] = check_signature(source, LAYERNORM, "layernorm")
    assert message.startswith(f"custom_kernel takes (x, weight, bias) for layernorm; this file's takes {written}")


def test_the_signature_check_has_nothing_to_say_without_the_tasks_inputs():
    assert check_signature("def custom_kernel():\n    return 0\n", (), "unknown") == []


def test_uploads_checked_on_many_threads_parse_one_at_a_time(monkeypatch):
    """The web server checks uploads on several threads; CPython 3.11's AST builder cannot build
    two trees at once (evaluator/contract/upload.py, parse): every parse of the checks takes its turn."""
    import ast
    import threading
    import time

    from evaluator.judge import scan
    from evaluator.contract import upload

    inside, most = [0], [0]
    real = ast.parse
    guard = threading.Lock()

    def slow_parse(*args, **kwargs):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.01)  # long enough for the other threads to arrive
        try:
            return real(*args, **kwargs)
        finally:
            with guard:
                inside[0] -= 1

    monkeypatch.setattr(upload.ast, "parse", slow_parse)
    source = "def custom_kernel(x):\n    return x\n"
    work = [lambda: upload.check_upload(source), lambda: upload.check_signature(source, ["x"], "t"),
            lambda: scan.scan(source)] * 4
    threads = [threading.Thread(target=w) for w in work]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_a_class_model_new_is_an_entry_and_its_signature_is_not_checked():
    """A KernelBench-style task's submission is a class ModelNew (evaluator/tasks/kernelbench.py):
    it passes the upload check, and the custom_kernel signature check leaves it alone."""
    from evaluator.contract.upload import check_signature, check_upload

    source = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    assert check_upload(source) == []
    assert check_signature(source, ("x", "w"), "3_linear") == []
    assert check_upload("class ModelOld:\n    pass\n")[0][0] == "no_custom_kernel"


def test_one_limit_on_an_upload_with_one_check():
    """MAX_BYTES is the one limit: check_upload's size check is upload_size_problem, which the
    sandbox calls before it makes a box, and the site's SUBMISSION_MAX_BYTES is the same number."""
    import ast as parsed
    from pathlib import Path

    from evaluator import check_upload, upload_size_problem

    over = b"#" * (MAX_BYTES + 1)
    assert upload_size_problem(MAX_BYTES) is None
    assert check_upload(over) == [upload_size_problem(len(over))]
    root = Path(__file__).resolve().parents[3]
    settings = parsed.parse((root / "leaderboard" / "settings.py").read_text())
    limit = next(node.value for node in parsed.walk(settings) if isinstance(node, parsed.Assign)
                 and any(getattr(t, "id", None) == "SUBMISSION_MAX_BYTES" for t in node.targets))
    assert isinstance(limit, parsed.Name) and limit.id == "MAX_BYTES"  # evaluator.MAX_BYTES, no second number
    run = parsed.parse((root / "sandbox" / "run.py").read_text())
    assert any(isinstance(node, parsed.Assign) and getattr(node.targets[0], "id", None) == "MAX_UPLOAD_BYTES"
               and getattr(node.value, "id", None) == "MAX_BYTES" for node in parsed.walk(run))
