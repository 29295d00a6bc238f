"""The report as a typed value: what the sandbox returns and what the site stores and reads.

    Report.from_untrusted(obj)  # a report file from the box: report.validate's checks, its errors
    Report.from_stored(obj)     # the JSON a site row holds, written by this or an older version
    report.to_json()            # the dict report.validate returns (stored, served, exported)

Standard library only. The parts the site reads field by field are frozen dataclasses; the
free-form parts (versions, isolation, readings, ceilings, profile, gpu_state, a shape row's
optional spread and batching figures, the box) are read-only mappings, frozen all the way down.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from evaluator.contract import report as schema
from evaluator.contract.fields import ReportError

EMPTY_MAP: Mapping = MappingProxyType({})


def freeze(value):
    """A JSON value that cannot be changed in place: objects as read-only mappings, lists as tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value):
    """freeze's value as plain JSON again (dicts and lists)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class ShapeRow:
    """One benchmark shape's timings. `optional` holds the figures older reports lack
    (report.SHAPE_OPTIONAL: percentiles, the speedup's spread, batching), only those present."""
    shape: Mapping[str, int]
    candidate_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    wall_ms: float | None = None
    floor_ms: float | None = None
    speedup_vs_compile: float | None = None
    speedup_vs_eager: float | None = None
    optional: Mapping[str, float | int | None] = field(default_factory=lambda: EMPTY_MAP)

    @property
    def speedup_vs_compile_rel_se(self) -> float | None:
        return self.optional.get("speedup_vs_compile_rel_se")

    @property
    def speedup_rounds(self) -> int | None:
        return self.optional.get("speedup_rounds")

    def to_json(self) -> dict:
        out = {"shape": dict(self.shape)}
        out.update((key, getattr(self, key)) for key in schema.SHAPE_NUMBERS)
        out.update(self.optional)
        return out

    @classmethod
    def _from(cls, row: Mapping) -> ShapeRow:
        return cls(shape=_shape(row.get("shape")), **{k: row.get(k) for k in schema.SHAPE_NUMBERS},
                   optional=MappingProxyType({k: row[k] for k in schema.SHAPE_OPTIONAL if k in row}))


@dataclass(frozen=True, slots=True)
class TestRow:
    """One correctness check. `hidden` and `family`: a shape drawn for this evaluation and the
    input family it was drawn for; written to JSON only when set."""
    __test__ = False  # not a pytest class, whatever its name

    shape: Mapping[str, int]
    passed: bool | None
    max_abs_err: float | None = None
    message: str = ""
    hidden: bool = False
    family: str | None = None

    def to_json(self) -> dict:
        return {"shape": dict(self.shape), "passed": self.passed, "max_abs_err": self.max_abs_err,
                "message": self.message, **({"hidden": True} if self.hidden else {}),
                **({"family": self.family} if self.family else {})}

    @classmethod
    def _from(cls, row: Mapping) -> TestRow:
        return cls(shape=_shape(row.get("shape")), passed=row.get("passed"), max_abs_err=row.get("max_abs_err"),
                   message=_str(row.get("message")), hidden=bool(row.get("hidden")), family=row.get("family") or None)


@dataclass(frozen=True, slots=True)
class Phases:
    """Where the evaluation's time went, in seconds (report.empty says what each phase is);
    0 for a phase that did not run or that an older report lacks."""
    setup_s: float = 0.0
    startup_s: float = 0.0
    compile_s: float = 0.0
    compile_wait_s: float = 0.0
    correctness_s: float = 0.0
    timing_s: float = 0.0
    sanitizer_s: float = 0.0
    profile_s: float = 0.0
    close_s: float = 0.0
    sandbox_s: float = 0.0

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def _from(cls, phases: Mapping) -> Phases:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in phases.items() if k in known and _is_number(v)})


@dataclass(frozen=True, slots=True)
class SanitizerRow:
    tool: str = ""
    ok: bool | None = None
    findings: tuple[str, ...] = ()
    seconds: float = 0.0
    note: str = ""

    def to_json(self) -> dict:
        return {"tool": self.tool, "ok": self.ok, "findings": list(self.findings), "seconds": self.seconds,
                "note": self.note}

    @classmethod
    def _from(cls, row: Mapping) -> SanitizerRow:
        return cls(tool=_str(row.get("tool")), ok=row.get("ok"), findings=_texts(row.get("findings")),
                   seconds=row.get("seconds") if _is_number(row.get("seconds")) else 0.0,
                   note=_str(row.get("note")))


@dataclass(frozen=True, slots=True)
class Box:
    """Which box ran the evaluation, written by the sandbox on the host: backend, version, image
    and image_id as the backend described itself (only the keys it gave)."""
    given: Mapping[str, str | int | float | bool | None]

    backend = property(lambda self: self.given.get("backend"))
    version = property(lambda self: self.given.get("version"))
    image = property(lambda self: self.given.get("image"))
    image_id = property(lambda self: self.given.get("image_id"))

    def to_json(self) -> dict:
        return dict(self.given)


@dataclass(frozen=True, slots=True)
class Report:
    """The evaluator's report (schema 1); the fields in report.empty's order, which to_json keeps."""
    schema: int
    verdict: str
    reasons: tuple[str, ...]
    reason_codes: tuple[str, ...]
    task: str
    mode: str
    device: str
    gpu_name: str | None = None
    gpus_visible: int | None = None
    gpu_index: int | None = None
    gpu_uuid: str | None = None
    timing_gate: str = ""
    compile_cache: str = ""
    versions: Mapping = field(default_factory=lambda: EMPTY_MAP)
    speedup_vs_compile: float | None = None
    speedup_vs_eager: float | None = None
    shapes: tuple[ShapeRow, ...] = ()
    tests: tuple[TestRow, ...] = ()
    phases: Phases = field(default_factory=Phases)
    kernels_launched: tuple[str, ...] = ()
    sanitizer: tuple[SanitizerRow, ...] = ()
    logs: str = ""
    isolation: Mapping = field(default_factory=lambda: EMPTY_MAP)
    ceilings: Mapping | None = None
    profile: Mapping | None = None
    gpu_state: Mapping | None = None
    readings: Mapping = field(default_factory=lambda: EMPTY_MAP)
    box: Box | None = None

    @classmethod
    def from_untrusted(cls, obj) -> Report:
        """A report file's object from the box (or anything else untrusted), checked by
        report.validate: the same limits, ReportError with the same words."""
        return cls._from(schema.validate(obj))

    @classmethod
    def from_stored(cls, obj) -> Report:
        """The JSON a site row stores, which some older version may have written: a key it lacks
        takes report.empty's value; a part of the wrong kind reads as empty and a row that is no
        object is left out, so that an old or damaged report still shows what it holds. Not
        re-validated: the site checked it before storing it. ReportError when it is no report at
        all (not an object, or without its task, mode and device)."""
        if not isinstance(obj, Mapping):
            raise ReportError(f"report: a stored report must be an object, not {type(obj).__name__}")
        missing = [k for k in ("task", "mode", "device") if not isinstance(obj.get(k), str)]
        if missing:
            raise ReportError(f"report: the stored report has no {', '.join(missing)}")
        defaults = schema.empty(task=obj["task"], mode=obj["mode"], device=obj["device"])
        kinds = {key: type(value) for key, value in defaults.items() if value is not None}
        merged = {key: obj[key] if key in obj and (key not in kinds or _kind_ok(obj[key], kinds[key]))
                  else value for key, value in defaults.items()}
        return cls._from(merged)

    @classmethod
    def _from(cls, d: Mapping) -> Report:
        """From a dict with every key of report.empty (validated, or defaulted by from_stored)."""
        box = d["box"]
        return cls(
            schema=d["schema"], verdict=d["verdict"], reasons=_texts(d["reasons"]),
            reason_codes=_texts(d["reason_codes"]), task=d["task"], mode=d["mode"], device=d["device"],
            gpu_name=d["gpu_name"], gpus_visible=d["gpus_visible"], gpu_index=d["gpu_index"],
            gpu_uuid=d["gpu_uuid"], timing_gate=d["timing_gate"], compile_cache=d["compile_cache"],
            versions=freeze(d["versions"]), speedup_vs_compile=d["speedup_vs_compile"],
            speedup_vs_eager=d["speedup_vs_eager"],
            shapes=tuple(ShapeRow._from(r) for r in d["shapes"] if isinstance(r, Mapping)),
            tests=tuple(TestRow._from(r) for r in d["tests"] if isinstance(r, Mapping)),
            phases=Phases._from(d["phases"]), kernels_launched=_texts(d["kernels_launched"]),
            sanitizer=tuple(SanitizerRow._from(r) for r in d["sanitizer"] if isinstance(r, Mapping)),
            logs=d["logs"], isolation=freeze(d["isolation"]), ceilings=_map_or_none(d["ceilings"]),
            profile=_map_or_none(d["profile"]), gpu_state=_map_or_none(d["gpu_state"]),
            readings=freeze(d["readings"]),
            box=Box(MappingProxyType(dict(box))) if isinstance(box, Mapping) else None,
        )

    def to_json(self) -> dict:
        """The report as report.validate returns it: plain JSON, keys in report.empty's order."""
        parts = {"reasons": list(self.reasons), "reason_codes": list(self.reason_codes),
                 "shapes": [r.to_json() for r in self.shapes], "tests": [r.to_json() for r in self.tests],
                 "phases": self.phases.to_json(), "kernels_launched": list(self.kernels_launched),
                 "sanitizer": [r.to_json() for r in self.sanitizer],
                 "box": None if self.box is None else self.box.to_json()}
        return {f.name: parts[f.name] if f.name in parts else thaw(getattr(self, f.name))
                for f in dataclasses.fields(self)}

    def on_host(self, *, box: Mapping, sandbox_s: float) -> Report:
        """A copy with what the sandbox adds on the host after the box exited and its report was
        checked: which box ran it, and the sandbox's own share of the time."""
        return dataclasses.replace(self, box=Box(MappingProxyType(dict(box))),
                                   phases=dataclasses.replace(self.phases, sandbox_s=sandbox_s))

    @property
    def device_type(self) -> str:
        """The device type the report was measured on: the judge names the GPU it ran on
        ("cuda:NVIDIA H100 80GB HBM3"), "cuda" without a name, "cpu"."""
        if self.device == "cuda":
            return f"cuda:{self.gpu_name}" if self.gpu_name else "cuda"
        return self.device

    def shape_dicts(self) -> list[dict]:
        """The benchmark rows as JSON, for the scoring rules that also read results files."""
        return [row.to_json() for row in self.shapes]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind_ok(value, kind: type) -> bool:
    """Whether a stored value has its default's kind (a float default takes an int as well)."""
    if kind is float:
        return _is_number(value)
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _str(value) -> str:
    return value if isinstance(value, str) else ""


def _texts(values) -> tuple[str, ...]:
    return tuple(v for v in values or () if isinstance(v, str))


def _shape(value) -> Mapping[str, int]:
    return MappingProxyType(dict(value)) if isinstance(value, Mapping) else EMPTY_MAP


def _map_or_none(value) -> Mapping | None:
    return freeze(value) if isinstance(value, Mapping) else None
