"""The submission's one call under compute-sanitizer (judge/sanitize.py starts the tool with this
as its target): build the inputs of the smallest test shape, call the kernel once, synchronize.
Runs as the runner's user, so it belongs with the runner: it imports the submission.

    python -m evaluator.runner.sanitize_child --task T --source F --shape JSON --seed N
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv) -> int:
    """Inside the sanitizer: build the inputs, call the kernel once, synchronize."""
    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--seed", type=int, required=True)
    a = p.parse_args(argv)
    import importlib.util

    import torch

    from evaluator.tasks import get_task

    task = get_task(a.task)
    inputs = task.make_inputs(json.loads(a.shape), a.seed, "cuda")
    spec = importlib.util.spec_from_file_location("submission", a.source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task.entry(module, "cuda")(*inputs)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
