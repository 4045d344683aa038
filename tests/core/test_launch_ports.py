"""The chief's ports of a script trial spanning machines, from one free offset."""

import socket

import pytest

from determined.core._distributed import DEFAULT_PORT
from determined.launch import _ports


def test_a_free_offset_frees_both_ports_and_round_trips_through_the_rendezvous_port():
    offset = _ports.free_port_offset()
    assert _ports.chief_ports(offset) == [DEFAULT_PORT + offset, 29400 + offset]
    for port in _ports.chief_ports(offset):
        with socket.socket() as s:
            s.bind(("", port))  # free now
    assert _ports.offset_of(_ports.rendezvous_port(offset)) == offset


def test_a_taken_port_is_not_picked(monkeypatch):
    held = socket.socket()
    try:
        for taken in range(1, 3001):  # hold the rendezvous port of some offset
            try:
                held.bind(("", 29400 + taken))
                break
            except OSError:
                continue
        held.listen()
        other = next(o for o in range(taken + 1, 3001)
                     if all(_ports._free(p) for p in _ports.chief_ports(o)))
        picks = iter([taken, other])
        monkeypatch.setattr(_ports.random, "randint", lambda a, b: next(picks))
        assert _ports.free_port_offset() == other
    finally:
        held.close()


def test_a_port_outside_the_rendezvous_range_is_refused():
    with pytest.raises(ValueError, match="rendezvous port in 29400"):
        _ports.offset_of(8080)
