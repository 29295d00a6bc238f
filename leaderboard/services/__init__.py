"""Every write the site makes: submissions and their life cycle, admin decisions, bans, API
tokens, the task catalog.

Keyword-only functions that start with a status guard. Views, the admin, the API, the Celery tasks
and the management commands call these (as `services.<name>`); none of them writes to the models
directly. One module per domain:

- submissions: the upload checks, the per-user limits, the new row;
- idempotency: an API upload under an Idempotency-Key, made once;
- pipeline: the message, the claim, the heartbeat, the stored result, the repair job;
- audit: staff decisions and the owner's publication, each with its audit entry;
- tokens: API keys;
- catalog: Task rows from what the evaluator says of each task in a box (the built-in tasks, and
  those staff add: describe, triage), retiring a task, and the ruler's calibration
  (reference_source: the reference code of a task the tests hold in their own process);
- competitions: creating and editing a competition, freezing its standings;
- opencode: staff withholding a submission's code, or releasing it;
- profiling: profile mode's rate limit, its stored .ncu-rep and who may have it;
- results_file: the finished evaluations as one JSON file, and that file loaded into a site;
- ties: the tie rule's stored fields rescored when a task's calibration changes.

These last five are imported as modules (`from leaderboard.services import competitions`).
"""
from leaderboard.services.audit import (submission_approve, submission_disqualify, submission_publish,
                                        submission_rerun, user_ban, user_unban)
from leaderboard.services.catalog import task_record_calibration, task_retire, task_store, task_sync, tasks_refloor
from leaderboard.services.task_additions import task_add, task_addition_request, task_addition_run, tasks_load_builtin
from leaderboard.services.errors import KeyReused, NotAllowed, QueueFull, RateLimited
from leaderboard.services.idempotency import submission_create_once
from leaderboard.services.pipeline import (fair_order, submission_claim, submission_claim_next,
                                           submission_enqueue, submission_fail, submission_heartbeat,
                                           submission_release_for_retry, submission_set_phase,
                                           submission_store_result, submissions_requeue_orphans,
                                           submissions_requeue_stuck)
from leaderboard.services.submissions import submission_create, upload_allowance
from leaderboard.services.tokens import api_token_authenticate, api_token_create, api_token_revoke, api_token_used

__all__ = [
    "KeyReused", "NotAllowed", "QueueFull", "RateLimited",
    "api_token_authenticate", "api_token_create", "api_token_revoke", "api_token_used",
    "fair_order", "submission_approve", "submission_claim", "submission_claim_next", "submission_create",
    "submission_create_once", "submission_disqualify", "submission_enqueue", "submission_fail", "submission_heartbeat",
    "submission_publish", "submission_release_for_retry", "submission_rerun", "submission_set_phase",
    "submission_store_result", "submissions_requeue_orphans", "submissions_requeue_stuck",
    "task_add", "task_addition_request", "task_addition_run", "task_record_calibration", "task_retire",
    "task_store", "task_sync", "tasks_load_builtin", "tasks_refloor", "upload_allowance", "user_ban", "user_unban",
]
