"""Kernel evaluator: judges a submitted `custom_kernel` for correctness and speed.

Importing this package is cheap (no torch): the site's upload form uses `validate_source`.
The judge is `evaluator.api.evaluate_file` / `python -m evaluator run`; see docs/evaluator.md.
"""
from .upload import MAX_BYTES, validate_source

__all__ = ["MAX_BYTES", "validate_source"]
