"""The reference a task page shows: the `reference` function with the module-level helpers and
constants it uses (transformer_block's `_block`), read with ast from its module."""
import importlib.util

import pytest

from leaderboard.models import Task
from leaderboard.services.reference_source import reference_source

MODULE = '''\
import functools

import torch

SCALE = 2.0
UNUSED_CONSTANT = 3


def _unused(x):
    return x


def _inner(x):
    return x * SCALE


@functools.lru_cache
def _outer(x):
    return _inner(x) + 1


def reference(x, _unused):
    # the parameter named like a module function hides it
    return _outer(_unused) + torch.zeros(1)
'''


def test_the_reference_brings_the_helpers_and_constants_it_uses(tmp_path):
    path = tmp_path / "planted_task.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("planted_task", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shown = reference_source(module.reference)
    assert "SCALE = 2.0" in shown and "def _inner(x):" in shown and "@functools.lru_cache\ndef _outer" in shown
    assert shown.index("SCALE") < shown.index("def _inner") < shown.index("def _outer") < shown.index("def reference")
    assert "UNUSED_CONSTANT" not in shown and "def _unused" not in shown and "import" not in shown
    compile(shown, "shown", "exec")  # whole definitions, nothing cut in the middle


@pytest.mark.django_db
def test_transformer_blocks_reference_shows_block():
    from evaluator.tasks import get_task
    from leaderboard import services

    services.task_sync(spec=get_task("transformer_block"))
    shown = Task.objects.get(name="transformer_block").reference_source
    for part in ("HEAD_DIM = 128", "EPS = 1e-6", "def _block(x, w_norm1", "F.scaled_dot_product_attention",
                 "def reference(x,", "return _block("):
        assert part in shown
    assert shown.index("def _block") < shown.index("def reference")
    assert "def make_inputs" not in shown and "reference_fp32" not in shown
    services.task_sync(spec=get_task("softmax"))
    assert Task.objects.get(name="softmax").reference_source.startswith("def reference(x: torch.Tensor)")


def test_a_folder_tasks_reference_as_describe_hands_it_over_is_read_without_running_it():
    """describe gives a folder task's reference.py as text: the site keeps its `reference` and what
    that uses, read with ast (the text below would fail if it ran: `boom` is never defined)."""
    from leaderboard.services.reference_source import reference_in_text

    text = ("import torch\n\nSCALE = 2.0\nUNUSED = boom()\n\n\ndef _helper(x):\n    return x * SCALE\n\n\n"
            "def reference(x):\n    return _helper(x)\n\n\ndef make_inputs(shape, seed, device):\n    return boom\n")
    shown = reference_in_text(text)
    assert shown == "SCALE = 2.0\n\n\ndef _helper(x):\n    return x * SCALE\n\n\ndef reference(x):\n    return _helper(x)\n"
    assert reference_in_text("def other():\n    pass\n") is None and reference_in_text("def (") is None
