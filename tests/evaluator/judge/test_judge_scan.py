from pathlib import Path

import pytest

from evaluator.judge.scan import needs_gpu, scan

HONEST_SOFTMAX = Path(__file__).resolve().parents[1] / "fixtures" / "softmax_triton.py"


def test_the_honest_submission_is_clean():
    assert scan(HONEST_SOFTMAX.read_text()) == []


@pytest.mark.parametrize("source, words", [
    ("import threading", "threading"),
    ("from concurrent.futures import ThreadPoolExecutor", "concurrent"),
    ("import multiprocessing as mp", "multiprocessing"),
    ("import os\nos.fork()", "os.fork"),
    ("import gc\n", "gc"),
    ("import ctypes", "ctypes"),
    ("import inspect", "inspect"),
    ("import sys\nf = sys._getframe(1)", "sys._getframe"),
    ("import sys\nsys.modules['evaluator.runner'].x = 1", "sys.modules"),
    ("import torch\ns = torch.cuda.Stream()", "torch.cuda.Stream"),
    ("import torch as T\nT.allclose = lambda *a, **k: True", "torch.allclose"),
    ("import time\ntime.perf_counter = lambda: 0.0", "time.perf_counter"),
    ("import torch\nsetattr(torch.cuda.Event, 'elapsed_time', None)", "setattr on torch.cuda.Event"),
    ("from torch.cuda import Event\nEvent.elapsed_time = None", "torch.cuda.Event.elapsed_time"),
    ("import evaluator.runner", "evaluator"),
    ("x = __import__('gc')", "__import__"),
    ("import torch\nclass Lazy(torch.Tensor):\n    pass", "subclasses torch.Tensor"),
    ("import sys\nm = getattr(sys, 'mod' + 'ules')", "computed name"),
    ("h = object()\nsetattr(h, 'a' + 'b', 1)", "computed name"),
    ("g = globals()", "globals()"),
    ("_get, _put = getattr, setattr\nimport sys\nm = _get(sys, 'modules')", "getattr as a value"),
    ("f = [getattr][0]", "getattr as a value"),
    ("import operator\nm = operator.attrgetter('modules')", "operator"),
    ("def f():\n    pass\nc = f.__code__", ".__code__"),
    ("import torch\nd = torch.Tensor.__dict__", ".__dict__"),
])
def test_it_flags_suspicious_constructs_with_their_line(source, words):
    findings = scan(source + "\ndef custom_kernel(x):\n    return x\n")
    assert findings, source
    assert any(words in f for f in findings), findings
    assert all(f.startswith("line ") for f in findings)


def test_literal_getattr_is_not_suspicious():
    src = "import triton.language as tl\nfma = getattr(tl, 'fma', None)\nok = hasattr(tl, 'dot')\n"
    assert scan(src) == []


def test_configuration_is_not_patching():
    src = "import os, torch\nos.environ['TRITON_INTERPRET'] = '1'\ntorch.backends.cuda.matmul.allow_tf32 = False\n"
    assert scan(src) == []


def test_cuda_source_needs_a_gpu():
    assert needs_gpu("from torch.utils.cpp_extension import load_inline\n")
    assert not needs_gpu(HONEST_SOFTMAX.read_text())
