from pathlib import Path

from evaluator import MAX_BYTES, validate_source
from evaluator.upload import check_upload

HONEST_SOFTMAX = Path(__file__).parent / "fixtures" / "softmax_triton.py"


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
