"""What the judge, the sandbox and the site agree on, in the standard library only: the report
and its validation, the reason codes and the words for them, the upload check, the progress file,
profile mode's output, the readings behind the GPU-only rules. Imports nothing else of the
evaluator (tests/foundation/test_evaluator_layers.py)."""
