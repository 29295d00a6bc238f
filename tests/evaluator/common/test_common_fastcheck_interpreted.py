"""The checker's GPU fast path (evaluator/common/fastcheck.py) run under Triton's interpreter on the CPU:
the keyed fingerprint tells changed bytes from unchanged ones, and the one-pass comparison gives
Tolerance.compare's verdict. A subprocess, because the interpreter is chosen when Triton is
imported."""
import textwrap

from interp_helpers import interpreted

SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.common import fastcheck
    from evaluator.tasks.base import Tolerance

    fastcheck._ready = lambda *t: fastcheck._load() is not None
    got = {}
    x = torch.randn(9001)  # three programs, the last one partly masked
    key = 0x9E3779B97F4A7C15
    fp = lambda t, k=key: int(fastcheck.fingerprint(t, k))
    y = x.clone()
    y.view(torch.int32)[1234] ^= 1
    z = x.clone()
    z.view(torch.int32)[[10, 20]] ^= -2**31  # two sign bits: cancels in any sum modulo 2**32
    m = torch.randn(30, 40)

    def by_hand(t, k):  # the kernel's arithmetic, word by word
        mask, total = 0xFFFFFFFF, 0
        for i, word in enumerate(t.view(torch.int32).tolist()):
            h = (i + (k & mask)) & mask
            h ^= h >> 16
            h = (h * 0x7FEB352D) & mask
            h ^= h >> 15
            h = (h * 0x846CA68B) & mask
            h ^= h >> 16
            total += word * (h ^ ((k >> 32) & mask))
        total %= 1 << 64
        return total - (1 << 64) if total >= 1 << 63 else total

    got["fingerprint"] = {
        "by_hand": fp(x) == by_hand(x, key),
        "same": fp(x) == fp(x.clone()),
        "one_bit": fp(y) != fp(x),
        "two_sign_bits": fp(z) != fp(x),
        "other_key": fp(x, key + 1) != fp(x) and fp(x, key + (1 << 32)) != fp(x),
        "strided": fp(m.t()) == fp(m.t().contiguous()),
        "odd_bytes": fastcheck.fingerprint(torch.zeros(7, dtype=torch.bfloat16), key) is None,
    }
    tol = Tolerance(atol=1e-4, rtol=1e-4)
    gold = torch.randn(5000)
    close = gold + 1e-6 * torch.randn(5000)
    far = gold.clone()
    far[17] += 0.5
    nan = close.clone()
    nan[3] = float("nan")
    nan[9] = float("inf")
    inf_gold = gold.clone()
    inf_gold[0] = float("inf")
    rows = {}
    for name, out in (("close", close), ("far", far), ("half", close.to(torch.bfloat16))):
        rows[name] = {"fast": list(fastcheck.compare(out, gold, tol.atol, tol.rtol)),
                      "torch": list(tol.compare(out, gold))}
    rows["nan"] = list(fastcheck.compare(nan, gold, tol.atol, tol.rtol))
    rows["inf_gold"] = fastcheck.compare(close, inf_gold, tol.atol, tol.rtol)
    got["compare"] = rows
    print(json.dumps(got))
""")


def test_fingerprint_and_compare_under_the_interpreter():
    got = interpreted(SCRIPT)
    assert got["fingerprint"] == {"by_hand": True, "same": True, "one_bit": True, "two_sign_bits": True, "other_key": True,
                                  "strided": True, "odd_bytes": True}
    rows = got["compare"]
    for name in ("close", "far", "half"):
        nonfinite, passed, err, worst = rows[name]["fast"]
        t_passed, t_err, t_worst = rows[name]["torch"]
        assert nonfinite == 0 and passed == t_passed, name
        assert abs(err - t_err) <= 1e-6 * max(t_err, 1e-30) + 1e-12, name
        assert abs(worst - t_worst) <= 1e-5 * t_worst, name
    assert rows["close"]["fast"][1] is True and rows["far"]["fast"][1] is False
    assert rows["nan"][0] == 2 and rows["nan"][1] is False
    assert rows["inf_gold"] is None  # the torch path decides what a non-finite gold answer means
