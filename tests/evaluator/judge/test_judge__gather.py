"""evaluator/judge/_gather.py: the checker's in-window read, launched directly under Triton's
interpreter (a child process): samples[k, j] is word idx[k, j] of output k, read through the
addresses in `addrs`, and nothing past the n samples of each output is written."""
import textwrap

from evaluator.judge import _gather
from interp_helpers import interpreted

SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.judge._gather import gather_words

    outs = [torch.arange(100, dtype=torch.int32) * 3, torch.arange(50, dtype=torch.int32) - 1000, torch.randn(70)]
    words = [o.view(torch.int32) for o in outs]
    n = 5
    idx = torch.tensor([[0, 99, 5, 6, 7], [49, 0, 1, 2, 3], [69, 68, 0, 10, 20]], dtype=torch.int32)
    addrs = torch.tensor([o.data_ptr() for o in outs], dtype=torch.int64)
    buf = torch.full((3 * n + 4,), -7, dtype=torch.int32)
    gather_words[(3, 2)](addrs, idx, buf, n, BLOCK=4)  # two programs per output, the second partly masked
    expect = torch.stack([w[i.long()] for w, i in zip(words, idx)])
    print(json.dumps({"samples": buf[:3 * n].view(3, n).tolist(), "expect": expect.tolist(),
                      "tail": buf[3 * n:].tolist()}))
""")


def test_gather_words_reads_the_named_words_of_every_output():
    got = interpreted(SCRIPT)
    assert got["samples"] == got["expect"]
    assert got["samples"][0] == [0, 297, 15, 18, 21] and got["samples"][1] == [-951, -1000, -999, -998, -997]
    assert got["tail"] == [-7] * 4


def test_gather_words_takes_its_arguments_in_the_order_the_checker_passes_them():
    assert _gather.gather_words.arg_names == ["addrs", "idx", "samples", "n", "BLOCK"]
