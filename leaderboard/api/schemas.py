"""What the API takes and answers, as typed declarations: django-ninja builds /api/openapi.json
from these, and validates every answer against them before it leaves.

Fields a caller does not always get (the owner's fields of a submission, a result's fields before
there is one) are optional and left out of the answer when unset (the operations' exclude_unset),
so the JSON is the same as the views build it. Times are ISO 8601 strings in UTC, as
views.iso_utc writes them."""
from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

Moment = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
Link = Annotated[str, WithJsonSchema({"type": "string", "format": "uri"})]
Status = Literal["queued", "running", "done", "failed"]
MODES = ("test", "ranked", "profile")
Mode = Literal[MODES]
VsCompile = Literal["faster", "tie", "slower"]
VS_COMPILE_DOC = ("How the speedup over torch.compile stands against 1.00 by the ruler's own noise: "
                  "\"tie\" when its interval (vs_compile_low to vs_compile_high: the speedup ± the task's "
                  "calibration band on its device type plus twice the run's round-to-round standard error) "
                  "holds 1.00, \"faster\" above it, \"slower\" below it; null without a speedup. A tie "
                  "ranks at 1.00.")


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Rows(BaseModel):
    """A row of the evaluator's report: the keys named here, and whatever else the report holds."""

    model_config = ConfigDict(extra="allow")


# --- uploads --------------------------------------------------------------------------------

class SubmissionIn(BaseModel):
    """POST /api/submissions as JSON. The same fields as a multipart form (SubmissionForm)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    task: str = Field(description="A task's name (GET /api/tasks).")
    source: str = Field(description="The kernel: a Python file that defines custom_kernel, at most 256 KiB.")
    # a string here, its value the service's to check: an unknown mode is refused in its words
    mode: str = Field("ranked", description="ranked (the default), test, or profile.",
                      json_schema_extra={"enum": list(MODES)})
    filename: str = Field("submission.py", description="Its name, ending in .py.")


class SubmissionForm(BaseModel):
    """POST /api/submissions as multipart/form-data: the kernel as `file` (or `source`)."""

    task: str
    file: Optional[bytes] = Field(None, json_schema_extra={"format": "binary"})
    source: Optional[str] = Field(None, description="The kernel as text, without a file.")
    mode: Mode = "ranked"
    filename: Optional[str] = Field(None, description="With `source`; a `file` carries its own name.")


# --- submissions ----------------------------------------------------------------------------

class ShapeRow(Rows):
    shape: Any = None
    candidate_ms: Optional[float] = None
    eager_ms: Optional[float] = None
    compile_ms: Optional[float] = None
    floor_ms: Optional[float] = None
    judge_floor_ms: Optional[float] = None
    pct_of_floor: Optional[float] = None
    speedup_vs_compile: Optional[float] = None
    speedup_vs_eager: Optional[float] = None
    band_pct: Optional[float] = None
    noisy: Optional[bool] = None


class TestRow(Rows):
    shape: Any = None
    passed: Optional[bool] = None
    message: Optional[str] = None


class SubmissionOut(Out):
    """One submission. Everything for its owner and staff; to anyone else, of a public one, the
    fields in views.PUBLIC_FIELDS (plus `logs` while its code is open)."""

    id: int
    url: Link
    task: str
    mode: Mode
    device_type: str
    filename: str
    status: Status
    phase: str
    finished: bool
    created_at: Optional[Moment] = None
    started_at: Optional[Moment] = None
    finished_at: Optional[Moment] = None
    attempts: Optional[int] = Field(None, description="Claims by a worker so far (owner and staff).")
    page: Link
    # until it is finished
    queue_position: Optional[int] = Field(None, description="1 = next; null while running.")
    elapsed_s: Optional[float] = None
    typical_s: Optional[float] = Field(None, description="The median duration of such runs here; null before "
                                                         "the first.")
    # once it is finished
    report: Optional[Link] = Field(None, description="The stored report's address (owner and staff).")
    verdict: Optional[str] = Field(None, description="verified, flagged, rejected, or empty for a failed run.")
    reasons: Optional[list[str]] = None
    reason_codes: Optional[list[str]] = None
    speedup_vs_compile: Optional[float] = None
    vs_compile: Optional[VsCompile] = Field(None, description=VS_COMPILE_DOC)
    vs_compile_low: Optional[float] = Field(None, description="The interval's lower end (see vs_compile).")
    vs_compile_high: Optional[float] = Field(None, description="The interval's upper end (see vs_compile).")
    speedup_vs_eager: Optional[float] = None
    pct_of_floor: Optional[float] = None
    ranked: Optional[bool] = None
    hidden: Optional[bool] = None
    gpu_name: Optional[str] = None
    gpu_index: Optional[int] = Field(None, description="The host's index of the GPU it ran on; null on the CPU.")
    gpu_uuid: Optional[str] = Field(None, description="That GPU's UUID as nvidia-smi writes it.")
    versions: Optional[dict[str, Any]] = None
    shapes: Optional[list[ShapeRow]] = None
    tests: Optional[list[TestRow]] = None
    logs: Optional[str] = None
    error: Optional[str] = None
    profile: Optional[dict[str, Any]] = Field(None, description="Profile mode (owner and staff).")
    profile_file: Optional[Link] = None
    # the detail's
    yours: Optional[bool] = Field(None, description="Whether the caller uploaded it (staff reading another's: false).")
    code_open: Optional[bool] = None
    code_open_reason: Optional[str] = None
    source: Optional[Link] = Field(None, description="The code's address where the caller may read it, else null.")


class SubmissionPage(Out):
    count: int
    page: int
    pages: int
    per_page: int
    next: Optional[Link]
    previous: Optional[Link]
    results: list[SubmissionOut] = Field(description="Summaries: no logs, tests or per-shape rows.")


class SourceOut(Out):
    id: int
    filename: str
    code_open: bool
    code_open_reason: str
    source: str


# --- tasks and leaderboards ------------------------------------------------------------------

class TaskOut(Out):
    name: str
    title: str
    signature: str
    track: str = Field("builtin", description='"builtin", or the track a task the site added belongs to '
                                              '("kernelbench-level1", ...).')
    retired: bool = Field(False, description="A retired task takes no new uploads; its leaderboards stay.")
    best_speedup_vs_compile: Optional[float]
    best_vs_compile: Optional[VsCompile] = Field(None, description="vs_compile of that best result.")
    submissions: int = Field(description="Every evaluation of the task: every mode (test and profile runs too) "
                                         "and every outcome (rejected ones too).")
    verified_ranked: int = Field(description="The verified ranked results among them that rank (any device).")
    leaderboard: Link


class TaskList(Out):
    tasks: list[TaskOut]


class BoardEntry(Out):
    rank: int
    user: str
    submission: int
    page: Link
    code_open: bool
    speedup_vs_compile: Optional[float]
    vs_compile: Optional[VsCompile] = Field(None, description=VS_COMPILE_DOC)
    vs_compile_low: Optional[float] = Field(None, description="The interval's lower end (see vs_compile).")
    vs_compile_high: Optional[float] = Field(None, description="The interval's upper end (see vs_compile).")
    speedup_vs_eager: Optional[float]
    median_ms: Optional[float] = Field(None, description=(
        "The kernel's median time in ms at the benchmark shape; the geometric mean over the shapes when "
        "there are several."))
    noisy: bool = Field(False, description=(
        "The run's timed calls spread widely (the result page's rule: a side's p10-p90 band over 25 % of "
        "its median on some shape), so its speedup is uncertain."))
    pct_of_floor: Optional[float]
    gpu_name: str
    created_at: Optional[Moment]


class Leaderboard(Out):
    task: str
    device_type: str
    device_types: list[str]
    entries: list[BoardEntry]


# --- competitions ------------------------------------------------------------------------------

class CompetitionSummary(Out):
    slug: str
    title: str
    url: Link
    page: Link
    tasks: list[str]
    devices: list[str]
    opens_at: Moment
    closes_at: Moment
    state: Literal["upcoming", "open", "closed"]
    final: bool = Field(description="The standings are frozen.")
    frozen_at: Optional[Moment]
    export: Optional[Link] = Field(description="The export's address once final, else null.")


class CompetitionList(Out):
    competitions: list[CompetitionSummary]


class StandingsEntry(Out):
    rank: int
    user: str
    submission: int
    url: Link
    page: Link
    speedup_vs_compile: Optional[float]
    speedup_vs_eager: Optional[float]
    pct_of_floor: Optional[float]
    uploaded_at: Optional[Moment]
    code_open: bool
    rank_at_freeze: Optional[int] = Field(None, description="Once final.")


class RemovedEntry(Out):
    rank_at_freeze: int
    user: str
    submission: int
    url: Link
    page: Link
    uploaded_at: Optional[Moment]
    removed_at: Optional[Moment]
    removed_by: str
    reason: str
    code_open: bool


class LateUpload(Out):
    user: str
    submission: int
    url: Link
    page: Link
    task: str
    device_type: str
    speedup_vs_compile: Optional[float]
    speedup_vs_eager: Optional[float]
    uploaded_at: Optional[Moment]
    code_open: bool


class Board(Out):
    task: str
    device_type: str
    entries: list[StandingsEntry]
    removed: list[RemovedEntry] = Field(description="Entries a disqualification took out after the freeze.")


class CompetitionDetail(CompetitionSummary):
    text: str
    evaluating: Optional[int] = Field(None, description="While closed but not final: results still to come.")
    awaiting_review: Optional[int] = Field(None, description="While closed but not final: flagged results.")
    boards: list[Board]
    after_deadline: list[LateUpload] = Field(description="Uploads after the close, never in the standings.")
