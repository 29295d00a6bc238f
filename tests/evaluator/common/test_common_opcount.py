"""evaluator/common/opcount.py: the recorder attributes the aten operators one call ran (computing
ones only, with their largest operand and matrix FLOPs), and library_work applies the judge's
shares."""
import torch

from evaluator.common import opcount


def test_base_name_drops_the_in_place_underscore_only():
    assert opcount.base_name("add_") == "add"
    assert opcount.base_name("_softmax") == "_softmax"
    assert opcount.base_name("mul") == "mul"


def test_matmul_flops():
    assert opcount.matmul_flops("mm", [(4, 5), (5, 3)]) == 2 * 4 * 5 * 3
    assert opcount.matmul_flops("addmm", [(3,), (4, 5), (5, 3)]) == 2 * 4 * 5 * 3  # the bias is not a matrix
    assert opcount.matmul_flops("bmm", [(2, 4, 5), (2, 5, 3)]) == 2 * 2 * 4 * 5 * 3
    assert opcount.matmul_flops("mv", [(4, 5), (5,)]) == 0.0
    q, k = (2, 8, 16, 32), (2, 8, 24, 32)
    assert opcount.matmul_flops("_scaled_dot_product_attention", [q, k, k]) == 4.0 * 2 * 8 * 16 * 24 * 32


def test_the_recorder_sees_computing_operators_and_not_allocation_or_views():
    x, a, b = torch.randn(8, 16), torch.randn(4, 5), torch.randn(5, 3)
    with opcount.recorder() as rec:
        torch.softmax(x, -1)
        torch.mm(a, b)
        torch.nn.functional.linear(a, b.t())  # a second matrix product, through a view
        x.add_(1)  # in place: counted as add
        torch.empty(3)
        x.view(-1).clone()
    assert rec.ops == {"_softmax": [1, 128, 0.0], "mm": [2, 20, 240.0], "add": [1, 128, 0.0]}


def test_the_recorder_records_nothing_outside_its_block():
    rec = opcount.recorder()
    torch.exp(torch.randn(4))
    assert rec.ops == {}


def test_library_work_applies_the_element_and_flop_shares():
    ops = {"_softmax": [1, 64, 0.0], "exp": [2, 63, 0.0], "mm": [1, 20, 30.0], "addmm": [1, 20, 10.0]}
    found = opcount.library_work(ops, out_numel=128, task_flops=100.0)
    assert found == ["torch _softmax on 64 elements", "torch mm (30% of the task's FLOPs)"]
    assert opcount.library_work(ops, out_numel=0, task_flops=0.0) == []
    assert opcount.library_work(ops, out_numel=129, task_flops=121.0) == []
