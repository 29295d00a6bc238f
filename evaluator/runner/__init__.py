"""Everything that runs in the submission's own process (`python -m evaluator.runner.harness`, the
harness) and in the profiler's child of the runner's user. The only package that imports a
submission, and it imports nothing of `judge/`: whatever it holds, the submission controls."""
