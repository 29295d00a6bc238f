"""CUDA inter-process memory, through the driver API (libcuda), for the batch timing.

A trusted process (the checker, checker.py) and a runner of the same uid share device memory: the
checker exports the buffer that holds a batch's inputs, the runner maps it; the runner exports the
allocations that hold its outputs, the checker maps them and reads them itself. Nothing crosses
through the runner's claims but the descriptors, and a descriptor only says where to look.

The driver API is used directly (ctypes) rather than torch's own sharing: torch's path adds a
reference-count file in shared memory and event handles that the checker does not need, and the
checker must never depend on the runner's cooperation to release anything.
"""
from __future__ import annotations

import ctypes

import torch

HANDLE_BYTES = 64
LAZY_ENABLE_PEER_ACCESS = 1
# mappings kept open per process, beyond which the least recently used is closed: more than the
# outputs of the largest batch (batch.MAX_CALLS) and its input buffer, so that no mapping a batch
# still reads is ever closed under it
MAX_OPEN = 1024
CU_POINTER_ATTRIBUTE_BUFFER_ID = 7  # an id the driver never gives two allocations in a process


class IpcError(RuntimeError):
    pass


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * HANDLE_BYTES)]


_lib = None


def _driver():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64),
                                                ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint64]
        lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_Handle), ctypes.c_uint64]
        opener = getattr(lib, "cuIpcOpenMemHandle_v2", None) or lib.cuIpcOpenMemHandle
        opener.argtypes = [ctypes.POINTER(ctypes.c_uint64), _Handle, ctypes.c_uint]
        lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
        lib.cuPointerGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
        lib.open_handle = opener
        _lib = lib
    return _lib


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise IpcError(f"{what} failed with CUDA driver error {rc}")


def _range(ptr: int) -> tuple[int, int]:
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(_driver().cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ptr),
           "cuMemGetAddressRange")
    return base.value, int(size.value)


def _buffer_id(ptr: int) -> int:
    found = ctypes.c_uint64()
    _check(_driver().cuPointerGetAttribute(ctypes.byref(found), CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr),
           "cuPointerGetAttribute")
    return found.value


class Exporter:
    """Describes where tensors lie, one IPC handle per allocation. Handles are kept per allocation
    (its driver buffer id: an allocation freed and made again at the same address is a new one):
    the caching allocator hands the same allocations out again batch after batch, and asking the
    driver for a handle again would cost about 14 us per output inside the timed window.

    The descriptor names the allocation by that id too. The driver gives a new allocation at the
    address of a freed one the same handle bytes, and a process that still has the old one mapped
    would read the freed memory, which its mapping keeps alive; the id tells the mapper to map
    again (Mapper._map)."""

    def __init__(self):
        self.handles: dict[int, str] = {}

    def export(self, t: torch.Tensor) -> dict:
        """The IPC handle (hex) of the allocation that holds t, the allocation's size, and t's
        byte offset in it. Whoever maps it sees the whole allocation."""
        ptr = t.data_ptr()
        base, size = _range(ptr)
        key = _buffer_id(base)
        handle = self.handles.get(key)
        if handle is None:
            h = _Handle()
            _check(_driver().cuIpcGetMemHandle(ctypes.byref(h), base), "cuIpcGetMemHandle")
            handle = ctypes.string_at(ctypes.addressof(h), HANDLE_BYTES).hex()
            self.handles[key] = handle
        return {"handle": handle, "alloc": size, "offset": ptr - base, "id": key}


def export(t: torch.Tensor) -> dict:
    return Exporter().export(t)


class _Mem:
    """A bare device pointer, as torch.as_tensor takes it (no copy, no ownership)."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


class Mapper:
    """Maps other processes' allocations, each once, and hands out byte views of them.

    `pin`: every mapping handed out since the last `release` stays open and unchanged (the
    checker: the addresses of one batch's outputs are read until it is verified). A descriptor
    that names a pinned handle with another allocation id is refused then, rather than closing a
    mapping the batch still reads."""

    def __init__(self, pin: bool = False):
        self.open: dict[bytes, tuple[int, int, int]] = {}  # handle -> (address, size, allocation id)
        self.opened = 0  # handles opened so far (a cost the checker reports)
        self.pin = pin
        self.pinned: set[bytes] = set()

    def release(self) -> None:
        """The batch whose addresses were handed out is over: its mappings may be closed again."""
        self.pinned.clear()

    def address(self, desc: dict, nbytes: int) -> int:
        """The device address of nbytes at desc's offset in the mapped allocation; the range is
        checked against the allocation's size as this process's driver reports it, never as
        claimed. No tensor is made: inside the timed window this costs a dictionary lookup."""
        handle, offset, ident = _parse(desc)
        ptr, size = self._map(handle, ident)
        if offset < 0 or nbytes < 0 or offset + nbytes > size:
            raise IpcError(f"the range {offset}+{nbytes} lies outside its allocation of {size} bytes")
        if (ptr + offset) % 16:
            raise IpcError("the memory does not start on a 16-byte boundary")
        return ptr + offset

    def bytes_view(self, desc: dict, nbytes: int) -> torch.Tensor:
        """uint8 tensor of nbytes at desc's offset in the mapped allocation (range checked)."""
        return view(self.address(desc, nbytes), nbytes)

    def _map(self, handle: bytes, ident: int) -> tuple[int, int]:
        """The mapping of `handle`, opened once per allocation: the same handle bytes with another
        allocation id (an allocation made again where a freed one was) close the old mapping
        first, unless it is pinned. The id is the exporter's claim; a false one can only make
        this process map an allocation of the exporter's again, or read one the exporter no
        longer writes."""
        lib = _driver()
        if handle in self.open:
            ptr, size, known = self.open.pop(handle)
            if known == ident:
                self.open[handle] = (ptr, size, known)  # the most recently used goes last
                self._pin(handle)
                return ptr, size
            if handle in self.pinned:
                self.open[handle] = (ptr, size, known)
                raise IpcError("one allocation was described with two ids in one batch")
            lib.cuIpcCloseMemHandle(ptr)
        if len(self.open) >= MAX_OPEN:
            old = next((h for h in self.open if h not in self.pinned), None)
            if old is None:
                raise IpcError(f"more than {MAX_OPEN} allocations in one batch")
            lib.cuIpcCloseMemHandle(self.open.pop(old)[0])
        h = _Handle()
        ctypes.memmove(ctypes.addressof(h), handle, HANDLE_BYTES)
        ptr = ctypes.c_uint64()
        _check(lib.open_handle(ctypes.byref(ptr), h, LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
        self.open[handle] = (ptr.value, _range(ptr.value)[1], ident)
        self.opened += 1
        self._pin(handle)
        return self.open[handle][:2]

    def _pin(self, handle: bytes) -> None:
        if self.pin:
            self.pinned.add(handle)

    def close(self) -> None:
        lib = _driver() if self.open else None
        for ptr, _, _ in self.open.values():
            lib.cuIpcCloseMemHandle(ptr)
        self.open.clear()
        self.pinned.clear()


def view(address: int, nbytes: int) -> torch.Tensor:
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8, device="cuda")
    return torch.as_tensor(_Mem(address, nbytes), device="cuda")


def _parse(desc) -> tuple[bytes, int, int]:
    if not isinstance(desc, dict):
        raise IpcError("a memory descriptor must be an object")
    handle, offset, ident = desc.get("handle"), desc.get("offset"), desc.get("id")
    if not isinstance(handle, str) or len(handle) != 2 * HANDLE_BYTES:
        raise IpcError("malformed IPC handle")
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise IpcError("malformed offset")
    if isinstance(ident, bool) or not isinstance(ident, int):
        raise IpcError("malformed allocation id")
    try:
        return bytes.fromhex(handle), offset, ident
    except ValueError:
        raise IpcError("malformed IPC handle") from None
