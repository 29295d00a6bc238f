"""The control channel between judge and runner: length-prefixed JSON frames on two pipes.

Frame = 4-byte little-endian length + UTF-8 JSON object. The judge reads with a deadline and a size
cap; anything that is not a well-formed frame is a protocol violation (the runner's process is
untrusted: submission code can write to any of its file descriptors).
"""
from __future__ import annotations

import json
import os
import select
import struct
import time

MAX_FRAME = 1 << 20
HEADER = struct.Struct("<I")


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame."""


class Closed(Exception):
    """The peer closed its end (the runner exited)."""


class Timeout(Exception):
    """No complete frame before the deadline."""


def encode(obj: dict) -> bytes:
    body = json.dumps(obj, allow_nan=False, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME:
        raise ValueError("frame too large")
    return HEADER.pack(len(body)) + body


def send(fd: int, obj: dict) -> None:
    data = encode(obj)
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _reject_constant(name):
    raise ValueError(f"non-finite number {name}")


def decode(body: bytes) -> dict:
    try:
        obj = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"malformed frame: {type(e).__name__}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a frame must be a JSON object")
    return obj


def recv(fd: int, deadline: float | None = None, spin_s: float = 0.0) -> dict:
    """One frame; `deadline` is a time.monotonic() value (None: wait forever). With `spin_s`, the
    first spin_s seconds poll the pipe without sleeping: inside a timed window a process that
    sleeps on a pipe wakes tens to hundreds of microseconds after the data arrives, by an amount
    that depends on what the core did meanwhile, and that wake-up would be part of every window."""
    if spin_s > 0:
        _spin(fd, min(time.monotonic() + spin_s, deadline if deadline is not None else float("inf")))
    header = _read_exact(fd, HEADER.size, deadline)
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes is over the {MAX_FRAME}-byte cap")
    return decode(_read_exact(fd, size, deadline))


def _spin(fd: int, until: float) -> None:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while not poller.poll(0) and time.monotonic() < until:
        pass


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise Timeout()
        chunk = os.read(fd, min(n, 1 << 16))
        if not chunk:
            if chunks:
                raise ProtocolError("the runner closed the channel in the middle of a frame")
            raise Closed()
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)
