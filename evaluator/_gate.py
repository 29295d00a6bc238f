"""The timing gate's kernel (timing.Gate): every block spins until the flag holds this call's
token and at least hold_ns have passed, or until the timeout passes. Module level, like _warm.py,
so the kernel's globals hold `tl`. Marked internal: the runner's launch hook does not count it as
the submission's kernel."""
import triton
import triton.language as tl


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                     is_pure=False, pack=1)


@triton.jit(do_not_specialize=["token", "timeout_ns", "hold_ns"])
def gate_kernel(flag_ptr, token, timeout_ns, hold_ns):
    t0 = _now()
    seen = tl.load(flag_ptr, volatile=True)
    while ((seen != token) | (_now() - t0 < hold_ns)) & (_now() - t0 < timeout_ns):
        seen = tl.load(flag_ptr, volatile=True)


gate_kernel.evaluator_internal = True
