import os
import struct
import time

import pytest

from evaluator.wire import channel


def test_frames_round_trip(pipe):
    r, w = pipe
    channel.send(w, {"t": "done", "ms": 0.25})
    assert channel.recv(r, time.monotonic() + 1) == {"t": "done", "ms": 0.25}


def test_oversized_frames_are_a_protocol_error(pipe):
    r, w = pipe
    os.write(w, struct.pack("<I", channel.MAX_FRAME + 1))
    with pytest.raises(channel.ProtocolError):
        channel.recv(r, time.monotonic() + 1)


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"ms": NaN}', b"\xff\xfe"])
def test_malformed_frames_are_a_protocol_error(pipe, body):
    r, w = pipe
    os.write(w, struct.pack("<I", len(body)) + body)
    with pytest.raises(channel.ProtocolError):
        channel.recv(r, time.monotonic() + 1)


def test_a_silent_peer_times_out(pipe):
    r, _ = pipe
    with pytest.raises(channel.Timeout):
        channel.recv(r, time.monotonic() + 0.05)


def test_a_closed_peer_is_reported(pipe):
    r, w = pipe
    os.close(w)
    with pytest.raises(channel.Closed):
        channel.recv(r, time.monotonic() + 1)


def test_non_finite_numbers_cannot_be_sent():
    with pytest.raises(ValueError):
        channel.encode({"ms": float("nan")})
