"""Ctrl-C abandons a server connection's statement (engines/timeout.py `abandon_all`): a client
blocked on its socket sees the connection end at once, and so does its next write, where PyMySQL,
interrupted inside LOAD DATA LOCAL, used to wait 30 s for the server's net_read_timeout."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tdebench.engines import timeout

pytestmark = pytest.mark.unit


class Client:
    """Stands for a driver's connection: what registers is the object, its socket read on demand."""


def test_a_blocked_read_ends_at_once_and_the_next_write_fails() -> None:
    ours, servers = socket.socketpair()
    client = Client()
    timeout.abandon_on_interrupt(client, ours.fileno)
    try:
        threading.Timer(0.2, timeout.abandon_all).start()
        start = time.monotonic()
        assert ours.recv(16) == b""  # nothing was sent: only the shutdown ends this wait
        assert time.monotonic() - start < 5
        with pytest.raises(OSError):
            ours.sendall(b"the end-of-file packet")
        assert ours.fileno() >= 0, "the driver's descriptor stays the driver's to close"
    finally:
        timeout.forget(client)
        ours.close()
        servers.close()


def test_a_closed_or_forgotten_connection_is_passed_over() -> None:
    ours, servers = socket.socketpair()
    closed, forgotten = Client(), Client()
    timeout.abandon_on_interrupt(closed, lambda: None)
    timeout.abandon_on_interrupt(forgotten, ours.fileno)
    timeout.forget(forgotten)
    try:
        assert timeout.abandon_all() == 0
        ours.sendall(b"still connected")
        assert servers.recv(64) == b"still connected"
    finally:
        timeout.forget(closed)
        ours.close()
        servers.close()
