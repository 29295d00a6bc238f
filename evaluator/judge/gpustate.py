"""The GPU's state as NVML reports it, read by the judge before and after the timing phase: the SM
and memory clocks, temperature, power, the power limit, and the reasons NVML gives for holding
the clocks down.

Read-only: only NVML's `nvmlDeviceGet*` queries run here, never a `set*` call. A clock set by the
judge would stay set for every later evaluation on the GPU and change what the scores measure.

NVML comes from the optional package nvidia-ml-py (`pynvml`), imported when a reading is taken:
without it there is no state (`reading` returns None) and the evaluation runs as it would
otherwise. An NVML error becomes the reading's `error` text; it never raises into the judge.

Standard library only at import. The schema of a report's `gpu_state` and its validation live
in contract/gpu_state.py, which the sandbox and the site read without NVML.
"""
from __future__ import annotations

from evaluator.contract.gpu_state import FIELDS, MAX_REASONS, blank, validate  # noqa: F401 (the judge's own reading)

# nvml.h's clocks event (formerly throttle) reason bits, by the names a reading gives them
REASON_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clock_setting"),
)
# The clocks held down by heat or by the board's hardware: the timing then measured a slower GPU
# than the one the other evaluations ran on. The software power cap is not among them: an H200
# under a compute-bound kernel runs at its power limit as a matter of course (692 W of 700 W,
# SM 1425 MHz, on a matmul loop), and the rounds time the candidate and both baselines under the
# same cap, so it is shown on the page but flags nothing. An idle GPU and clocks an administrator
# set are the state the GPU is meant to be in; sync boost and the display clock do not slow a lone
# compute kernel.
THROTTLING = ("hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")
POWER_CAP = "sw_power_cap"
BENIGN = ("gpu_idle", "applications_clocks_setting", POWER_CAP)
# the SM clock after timing this much below the one before, on a GPU that is neither idle nor at
# its power cap, is throttling that the reason bits no longer show (a reading is an instant)
SM_DROP = 0.10

def nvml():
    """The pynvml module, or None when nvidia-ml-py is not installed."""
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def reading(device: int = 0) -> dict | None:
    """A reading of the CUDA device torch uses as `device` (the judge's device 0, whichever GPU
    CUDA_VISIBLE_DEVICES makes it); None without nvidia-ml-py."""
    nv = nvml()
    if nv is None:
        return None
    try:
        import torch

        uuid = str(torch.cuda.get_device_properties(device).uuid)
    except Exception as e:  # noqa: BLE001 - whatever went wrong is the reading's error
        return blank(error=f"torch: {e}"[:256])
    return read(nv, uuid)


def read(nv, uuid: str) -> dict:
    """One reading through the NVML module `nv` of the GPU with torch's `uuid`. NVML names a GPU
    by its UUID, not by torch's index: CUDA_VISIBLE_DEVICES renumbers the devices torch sees,
    NVML's indices are the machine's."""
    out = blank(uuid=uuid)
    try:
        nv.nvmlInit()
    except Exception as e:  # noqa: BLE001
        out["error"] = f"NVML: {e}"[:256]
        return out
    try:
        name = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
        handle = nv.nvmlDeviceGetHandleByUUID(name)
    except Exception as e:  # noqa: BLE001
        out["error"] = f"NVML: no GPU with UUID {uuid}: {e}"[:256]
        _shutdown(nv)
        return out
    errors = []
    for key, query in _queries(nv, handle):
        try:
            out[key] = query()
        except Exception as e:  # noqa: BLE001 - one field unsupported leaves the others
            errors.append(f"{key}: {e}")
    _shutdown(nv)
    out["error"] = "; ".join(errors)[:256]
    return out


def _queries(nv, handle):
    def reasons():
        get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if get is None:  # nvidia-ml-py before 12.535 has only the older name
            get = nv.nvmlDeviceGetCurrentClocksThrottleReasons
        return reason_names(get(handle))

    return (
        ("index", lambda: int(nv.nvmlDeviceGetIndex(handle))),
        ("sm_mhz", lambda: int(nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM))),
        ("mem_mhz", lambda: int(nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_MEM))),
        ("temp_c", lambda: int(nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU))),
        ("power_w", lambda: round(nv.nvmlDeviceGetPowerUsage(handle) / 1000, 1)),  # mW
        ("power_limit_w", lambda: round(nv.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000, 1)),
        ("reasons", reasons),
    )


def _shutdown(nv) -> None:
    try:
        nv.nvmlShutdown()
    except Exception:  # noqa: BLE001, S110 - nothing of the reading depends on it
        pass


def reason_names(mask: int) -> list[str]:
    """NVML's reason bits by name; a bit this module does not know keeps its hex value."""
    names = [name for bit, name in REASON_BITS if mask & bit]
    known = sum(bit for bit, _ in REASON_BITS)
    return names + [hex(1 << i) for i in range(64) if mask & ~known & (1 << i)]


# ---- the decision ------------------------------------------------------------------------------

def throttled(before: dict | None, after: dict | None) -> str | None:
    """The reason text when the GPU throttled during timing, else None. Throttled: the reading
    after timing shows a reason in THROTTLING, or its SM clock is more than SM_DROP below the
    reading before while NVML calls the GPU neither idle nor held at its power cap."""
    if not before or not after:
        return None
    limits = [r for r in after.get("reasons") or [] if r in THROTTLING]
    sm0, sm1 = before.get("sm_mhz"), after.get("sm_mhz")
    busy = not {"gpu_idle", POWER_CAP} & set(after.get("reasons") or [])
    dropped = bool(sm0 and sm1 is not None and busy and sm1 < (1 - SM_DROP) * sm0)
    if not limits and not dropped:
        return None
    return "the GPU throttled during timing: " + describe(before, after)


def describe(before: dict, after: dict) -> str:
    """"SM 1980->1410 MHz, memory 3201->3201 MHz, 84 C, 690 W of 700 W, reasons: sw_thermal"."""
    def pair(key):
        a, b = before.get(key), after.get(key)
        return f"{'?' if a is None else a}->{'?' if b is None else b}"

    parts = [f"SM {pair('sm_mhz')} MHz", f"memory {pair('mem_mhz')} MHz"]
    if after.get("temp_c") is not None:
        parts.append(f"{after['temp_c']} C")
    if after.get("power_w") is not None:
        limit = after.get("power_limit_w")
        parts.append(f"{after['power_w']:g} W" + (f" of {limit:g} W" if limit is not None else ""))
    parts.append("reasons: " + (", ".join(after.get("reasons") or []) or "none"))
    return ", ".join(parts)
