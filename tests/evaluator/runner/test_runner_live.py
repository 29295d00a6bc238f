"""evaluator/runner/live.py: the runner's small facts about live tensors and errors."""
import torch

from evaluator.runner import live


def test_plain_tensor_is_an_exact_strided_tensor_with_data():
    class Sub(torch.Tensor):
        pass

    assert live.plain_tensor(torch.zeros(3))
    assert live.plain_tensor(torch.zeros(3)[1:])
    assert not live.plain_tensor(torch.zeros(3).as_subclass(Sub))
    assert not live.plain_tensor(torch.zeros(3, device="meta"))
    assert not live.plain_tensor(torch.eye(3).to_sparse())
    assert not live.plain_tensor(torch.nn.Parameter(torch.zeros(3)))
    assert not live.plain_tensor([1.0])


def test_out_of_memory_is_told_from_other_errors():
    class OutOfMemoryError(RuntimeError):
        pass

    assert live.out_of_memory(MemoryError())
    assert live.out_of_memory(OutOfMemoryError("CUDA"))
    assert live.out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert live.out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not live.out_of_memory(ValueError("out of memory"))
    assert not live.out_of_memory(RuntimeError("shape mismatch"))


def test_a_real_allocation_failure_counts_as_out_of_memory():
    try:
        torch.empty(1 << 62, dtype=torch.uint8)
    except BaseException as e:  # noqa: BLE001
        assert live.out_of_memory(e)
    else:
        raise AssertionError("allocated 2**62 bytes")


def test_raw_span_and_overlap():
    t = torch.arange(6, dtype=torch.float32).view(2, 3)
    assert live.raw(t).dtype == torch.uint8 and live.raw(t).numel() == 24
    assert torch.equal(live.raw(t.t()).view(torch.float32), t.t().contiguous().flatten())
    base = torch.zeros(100)
    whole, part = live.span(base), live.span(base[50:])
    assert whole == (base.data_ptr(), base.data_ptr() + 400)
    assert part == whole  # a view spans its whole storage
    assert live.span(torch.zeros(0)) is None and live.span([1]) is None
    other = live.span(torch.zeros(100))
    assert live.overlap(whole, part) and not live.overlap(whole, other)
    assert not live.overlap(None, whole) and not live.overlap((0, 10), (10, 20)) and live.overlap((0, 11), (10, 20))


def test_type_name_and_one_line():
    assert live.type_name(torch.zeros(1)) == "torch.Tensor"
    assert live.type_name(3) == "builtins.int"
    assert live.one_line(ValueError("first\nsecond")) == "ValueError: first"
    assert live.one_line(KeyError()) == "KeyError: "
    assert len(live.one_line(RuntimeError("x" * 1000))) == 500
