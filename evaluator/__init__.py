"""Kernel evaluator: judges a submitted `custom_kernel` for correctness and speed.

Its public face, the only names the site (leaderboard/) and the sandbox may import, all from this
package itself (tests/foundation/test_layers.py enforces it; docs/architecture.md lists them):

- the upload check: `validate_source` (sentences for a form), `check_upload` (reason codes),
  `MAX_BYTES` (the one limit on an upload's size, the site's SUBMISSION_MAX_BYTES too),
  `upload_size_problem` (that limit's check alone, for the sandbox), `check_signature`
  (custom_kernel's parameters against a task's inputs), `parse_python` (ast.parse one thread at a time, for a threaded web server);
- the report schema: `Report` (the typed report: `Report.from_untrusted` at the trust boundary,
  `Report.from_stored` for a site row, `to_json`), `validate_report`, `ReportError`,
  `empty_report`, `verdict_for`, `CODES`, `MODES`, `DEVICES`, `time_split`;
- profile mode's output: `PROFILE_FILE_MAX_BYTES` (the largest .ncu-rep the judge writes) and
  `profile_summary` (a report's profile in lines of text);
- the judge's progress while it runs: `progress_latest` (the last line of a progress file),
  `progress_words` (a line as the site shows it);
- the words people read for its states: `verdict_word`, `status_word`, `state_word`
  (evaluator/contract/words.py, the one table of them);
- the task registry: `TASKS`, `get_task` (imports torch on first use);
- the ruler: `calibrate_tasks` (evaluator.judge.calibrate.calibrate; imports torch on first use).

Importing the package is cheap (no torch) until a torch-backed name is used. The judge itself runs
through `python -m evaluator run` or `evaluator.api.evaluate_file`; see docs/evaluator.md.
"""
from evaluator.contract.profile_report import MAX_FILE_BYTES as PROFILE_FILE_MAX_BYTES
from evaluator.contract.progress import latest as progress_latest
from evaluator.contract.progress import words as progress_words
from evaluator.contract.profile_report import summary_lines as profile_summary
from evaluator.contract.report import CODES, DEVICES, MODES, ReportError, time_split, verdict_for
from evaluator.contract.report import empty as empty_report
from evaluator.contract.report import validate as validate_report
from evaluator.contract.typed_report import Report
from evaluator.contract.upload import MAX_BYTES, check_signature, check_upload, validate_source
from evaluator.contract.upload import parse as parse_python
from evaluator.contract.upload import size_problem as upload_size_problem
from evaluator.contract.words import significant, state_word, status_word, verdict_word

__all__ = ["CODES", "DEVICES", "MAX_BYTES", "MODES", "PROFILE_FILE_MAX_BYTES", "Report", "ReportError", "TASKS",
           "calibrate_tasks", "check_signature", "check_upload", "empty_report", "get_task", "parse_python",
           "profile_summary",
           "progress_latest", "progress_words", "significant", "state_word", "status_word", "time_split",
           "upload_size_problem", "validate_report", "validate_source", "verdict_for", "verdict_word"]


def __getattr__(name: str):
    """The torch-backed names, imported when first asked for (PEP 562)."""
    if name in ("TASKS", "get_task"):
        from evaluator import tasks

        return getattr(tasks, name)
    if name == "calibrate_tasks":
        # not `calibrate`: once imported, the submodule evaluator.judge.calibrate is that attribute
        from evaluator.judge.calibrate import calibrate

        return calibrate
    raise AttributeError(f"module 'evaluator' has no attribute {name!r}")
