"""evaluator/wire/ipc.py's bookkeeping over a stand-in CUDA driver (no GPU here): which allocation a
descriptor names, when a mapping is opened again, which one is closed when too many are open.
The driver calls themselves run on the H200 (bench/judge_clock.py)."""
import ctypes

import pytest
import torch

from evaluator.wire import ipc

CUDA_ERROR_INVALID_VALUE = 1


class FakeDriver:
    """Allocations of the exporting process by base address; handles are the base address's bytes,
    as the driver gives a new allocation at a freed one's address the same handle bytes."""

    def __init__(self):
        self.allocs = {}  # base -> (size, buffer id)
        self.mapped = {}  # address in the mapping process -> size
        self.opened, self.closed, self.handles_made = [], [], 0
        self.next_map = 1 << 40

    def alloc(self, base: int, size: int, buffer_id: int) -> None:
        self.allocs[base] = (size, buffer_id)

    # exporter side
    def cuMemGetAddressRange_v2(self, base_ref, size_ref, ptr):
        for base, (size, _) in list(self.allocs.items()) + [(a, (s, 0)) for a, s in self.mapped.items()]:
            if base <= ptr < base + size:
                base_ref._obj.value, size_ref._obj.value = base, size
                return 0
        return CUDA_ERROR_INVALID_VALUE

    def cuPointerGetAttribute(self, out_ref, attribute, ptr):
        if attribute != 7:  # CU_POINTER_ATTRIBUTE_BUFFER_ID in cuda.h
            out_ref._obj.value = 1
            return 0
        out_ref._obj.value = self.allocs[ptr][1] if ptr in self.allocs else ptr  # a mapping's own id
        return 0

    def cuIpcGetMemHandle(self, handle_ref, base):
        if base in self.mapped:  # the driver exports only what this process allocated
            return CUDA_ERROR_INVALID_VALUE
        self.handles_made += 1
        ctypes.memmove(ctypes.addressof(handle_ref._obj), base.to_bytes(8, "little") + bytes(56), 64)
        return 0

    # mapper side
    def open_handle(self, ptr_ref, handle, flags):
        base = int.from_bytes(ctypes.string_at(ctypes.addressof(handle), 8), "little")
        size, _ = self.allocs[base]
        address = self.next_map
        self.next_map += 1 << 36
        self.mapped[address] = size
        self.opened.append(base)
        ptr_ref._obj.value = address
        return 0

    def cuIpcCloseMemHandle(self, address):
        self.closed.append(address)
        self.mapped.pop(address)
        return 0


@pytest.fixture
def driver(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setattr(ipc, "_driver", lambda: fake)
    return fake


class Tensor:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def test_each_allocation_is_described_by_its_own_handle_and_id(driver):
    driver.alloc(0x10000, 1 << 20, buffer_id=11)
    driver.alloc(0x200000, 1 << 20, buffer_id=12)
    exporter = ipc.Exporter()
    a = exporter.export(Tensor(0x10000 + 256))
    b = exporter.export(Tensor(0x200000))
    again = exporter.export(Tensor(0x10000 + 512))
    assert (a["id"], b["id"], again["id"]) == (11, 12, 11)
    assert a["handle"] != b["handle"] and again["handle"] == a["handle"]
    assert (a["offset"], again["offset"], a["alloc"]) == (256, 512, 1 << 20)
    assert driver.handles_made == 2  # the second output of an allocation costs no driver call


def test_a_new_allocation_where_a_freed_one_was_is_mapped_again(driver):
    driver.alloc(0x10000, 1 << 20, buffer_id=11)
    exporter = ipc.Exporter()
    old = exporter.export(Tensor(0x10000))
    mapper = ipc.Mapper()
    first = mapper.address(old, 1 << 20)
    assert mapper.address(old, 1024) == first and driver.opened == [0x10000]
    driver.alloc(0x10000, 2 << 20, buffer_id=12)  # freed and made again, twice the size
    new = exporter.export(Tensor(0x10000 + (1 << 20)))
    assert new["handle"] == old["handle"] and new["id"] == 12  # only the id tells them apart
    where = mapper.address(new, 1 << 20)
    assert driver.closed == [first] and driver.opened == [0x10000, 0x10000]
    assert where == next(iter(driver.mapped)) + (1 << 20)


def test_a_pinned_mapping_is_neither_replaced_nor_closed_within_a_batch(driver, monkeypatch):
    """The checker's mapper: the addresses of one batch stay valid until `release`."""
    driver.alloc(0x10000, 4096, buffer_id=11)
    desc = ipc.Exporter().export(Tensor(0x10000))
    mapper = ipc.Mapper(pin=True)
    first = mapper.address(desc, 16)
    with pytest.raises(ipc.IpcError, match="two ids in one batch"):
        mapper.address(dict(desc, id=99), 16)  # the same allocation under a second id
    assert driver.closed == [] and mapper.address(desc, 16) == first
    monkeypatch.setattr(ipc, "MAX_OPEN", 1)
    driver.alloc(0x20000, 4096, buffer_id=12)
    with pytest.raises(ipc.IpcError, match="allocations in one batch"):
        mapper.address(ipc.Exporter().export(Tensor(0x20000)), 16)
    mapper.release()  # the next batch: the same handle under a new id maps the new allocation
    driver.alloc(0x10000, 4096, buffer_id=13)
    mapper.address(dict(desc, id=13), 16)
    assert driver.closed == [first]


def test_a_range_beyond_the_mapped_allocation_is_refused(driver):
    driver.alloc(0x10000, 1 << 20, buffer_id=11)
    desc = ipc.Exporter().export(Tensor(0x10000))
    with pytest.raises(ipc.IpcError, match="outside its allocation"):
        ipc.Mapper().address(dict(desc, offset=1 << 19), 1 << 20)


def test_the_least_recently_used_mapping_is_closed_first(driver, monkeypatch):
    monkeypatch.setattr(ipc, "MAX_OPEN", 2)
    descs = []
    for i in range(3):
        driver.alloc(0x10000 * (i + 1), 4096, buffer_id=20 + i)
        descs.append(ipc.Exporter().export(Tensor(0x10000 * (i + 1))))
    mapper = ipc.Mapper()
    first = mapper.address(descs[0], 16)
    mapper.address(descs[1], 16)
    mapper.address(descs[0], 16)  # used again: the second is now the least recent
    mapper.address(descs[2], 16)
    assert len(driver.closed) == 1 and driver.closed[0] != first
    assert mapper.address(descs[0], 16) == first and mapper.opened == 3


@pytest.mark.parametrize("change", [{"id": "11"}, {"id": True}, {"id": None}, {"offset": 1.5},
                                    {"handle": "ab"}])
def test_malformed_descriptors_are_refused(driver, change):
    driver.alloc(0x10000, 4096, buffer_id=11)
    desc = dict(ipc.Exporter().export(Tensor(0x10000)), **change)
    if change.get("id", 0) is None:
        desc.pop("id")
    with pytest.raises(ipc.IpcError, match="malformed"):
        ipc.Mapper().address(desc, 16)


def test_an_output_in_the_mapped_inputs_is_named_as_aliasing(driver):
    """A kernel that returns its input hands back memory the runner mapped from the checker: the
    driver will not export it again, and the runner says why instead of crashing."""
    from evaluator.runner.batch import BatchCalls

    driver.alloc(0x10000, 1 << 20, buffer_id=11)
    inputs = ipc.Mapper().address(ipc.Exporter().export(Tensor(0x10000)), 1 << 20)
    with pytest.raises(ipc.IpcError, match="cuIpcGetMemHandle") as refused:
        ipc.Exporter().export(Tensor(inputs + 4096))
    # the runner's slots are views of one buffer, as map_inputs makes them (CPU tensors stand in)
    buffer = torch.zeros(1 << 12, dtype=torch.uint8)
    runner = BatchCalls()
    runner.slots = [(buffer[k * 1024:(k + 1) * 1024].view(torch.float32),) for k in range(4)]
    code, why = runner._unshareable([torch.ones(4), runner.slots[2][0]], refused.value)
    assert code == "aliases_input" and "input's memory" in why
    code, why = runner._unshareable([torch.ones(4)], refused.value)
    assert code == "wrong_type" and "cuIpcGetMemHandle" in why
