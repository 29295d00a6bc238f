"""channel.recv with spin_s: it polls, but never past the deadline, never on a closed pipe, and a
frame that arrives while it polls is read at once."""
import os
import threading
import time

import pytest

from evaluator.wire import channel


def test_a_frame_already_there_is_read_at_once(pipe):
    r, w = pipe
    channel.send(w, {"t": "batch_described"})
    t = time.monotonic()
    assert channel.recv(r, time.monotonic() + 5, spin_s=2.0) == {"t": "batch_described"}
    assert time.monotonic() - t < 0.5


def test_a_frame_sent_while_polling_ends_the_poll(pipe):
    r, w = pipe
    threading.Timer(0.1, lambda: channel.send(w, {"t": "batch_done"})).start()
    t = time.monotonic()
    assert channel.recv(r, time.monotonic() + 5, spin_s=2.0) == {"t": "batch_done"}
    assert time.monotonic() - t < 1.0


@pytest.mark.parametrize("wait_s", [5.0, None])
def test_a_closed_peer_ends_the_poll_at_once(pipe, wait_s):
    r, w = pipe
    os.close(w)
    t = time.monotonic()
    with pytest.raises(channel.Closed):
        channel.recv(r, None if wait_s is None else time.monotonic() + wait_s, spin_s=2.0)
    assert time.monotonic() - t < 0.5


@pytest.mark.parametrize("deadline_s, spin_s, low, high", [
    (0.1, 2.0, 0.0, 0.6),  # the deadline bounds the poll
    (0.4, 0.1, 0.35, 1.0),  # a silent peer after the poll times out at the deadline
])
def test_a_silent_peer_times_out_at_the_deadline(pipe, deadline_s, spin_s, low, high):
    r, _ = pipe
    t = time.monotonic()
    with pytest.raises(channel.Timeout):
        channel.recv(r, time.monotonic() + deadline_s, spin_s=spin_s)
    assert low <= time.monotonic() - t < high


def test_half_a_frame_then_silence_times_out(pipe):
    r, w = pipe
    os.write(w, channel.encode({"t": "batch_done"})[:6])
    t = time.monotonic()
    with pytest.raises(channel.Timeout):
        channel.recv(r, time.monotonic() + 0.3, spin_s=2.0)
    assert time.monotonic() - t < 0.8


def test_half_a_frame_then_close_is_a_protocol_error(pipe):
    r, w = pipe
    os.write(w, channel.encode({"t": "batch_done"})[:6])
    os.close(w)
    with pytest.raises(channel.ProtocolError):
        channel.recv(r, time.monotonic() + 1, spin_s=2.0)


def test_the_poll_spends_at_most_spin_s_of_cpu(pipe):
    """After spin_s the wait sleeps: a peer that stays silent costs spin_s of CPU, not the
    whole wait."""
    r, _ = pipe
    cpu = time.process_time()
    with pytest.raises(channel.Timeout):
        channel.recv(r, time.monotonic() + 1.0, spin_s=0.2)
    assert time.process_time() - cpu < 0.6
