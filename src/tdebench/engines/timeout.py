"""Statement timeouts and Ctrl-C for engines that run inside this process (DuckDB, SQLite),
and Ctrl-C for the clients of database servers (MariaDB, PostgreSQL).

One watchdog thread per connection sleeps until the running statement's deadline and then
calls the engine's `interrupt()`. Starting and ending a statement only sets a deadline under
a lock, so a timeout costs microseconds per query, not a thread per query.

Ctrl-C: while the main thread waits in an engine's C code, Python cannot run its signal
handler, so a long query would hold the interrupt until it finished. `interrupt_on_signals`
lets the C-level handler wake a thread (`signal.set_wakeup_fd`) that interrupts every open
embedded connection's statement at once; the Python handler then runs as soon as the C call
returns.

A server's client (PyMySQL, psycopg) cannot be interrupted that way, and its own handling of an
interrupt can wait on the server: a KeyboardInterrupt inside PyMySQL's LOAD DATA LOCAL leaves a
packet half sent, and its `finally` then sends the end-of-file packet and waits for an answer
the server, still reading the rest of that packet, gives only when its `net_read_timeout` (30 s)
runs out; psycopg waits for its cancel to be answered. So every such connection registers its
socket (`abandon_on_interrupt`), and the same wake-up shuts every one of them down
(`abandon_all`): whatever the client waits for, or waits for next, ends at once with a lost
connection, and the statement in flight is abandoned to the server, which the run stops next.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tdebench.engines.base import QueryTimeout
from tdebench.measure.process import helper

_OPEN: "weakref.WeakSet[Watchdog]" = weakref.WeakSet()  # every connection's watchdog not yet closed
_OPEN_LOCK = threading.Lock()
# every open server connection's socket descriptor, read when needed (None: closed meanwhile)
_SOCKETS: "weakref.WeakKeyDictionary[object, Callable[[], int | None]]" = weakref.WeakKeyDictionary()


class Watchdog:
    def __init__(self, interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt
        self._seconds: float | None = None
        self._deadline: float | None = None
        self._fired = False
        self._cancelled = False  # interrupted by Ctrl-C (interrupt_all), not by the timeout
        self._closed = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        with _OPEN_LOCK:
            _OPEN.add(self)

    def set_timeout(self, seconds: float | None) -> None:
        if seconds is not None and seconds <= 0:
            raise ValueError("a timeout must be positive")
        self._seconds = seconds
        if seconds is not None and self._thread is None:
            self._thread = threading.Thread(target=helper(self._watch), name="tdebench-watchdog", daemon=True)
            self._thread.start()

    @contextmanager
    def statement(self) -> Iterator[None]:
        """Guard one statement; QueryTimeout if the watchdog had to interrupt it,
        KeyboardInterrupt if Ctrl-C did (the engine's own "interrupted" error is replaced)."""
        with self._cond:
            self._fired = self._cancelled = False
            if self._seconds is not None:
                self._deadline = time.monotonic() + self._seconds
                self._cond.notify()
        try:
            yield
        except Exception as exc:
            # DuckDB runs the Python handler itself and wraps its KeyboardInterrupt
            if self._cancelled or isinstance(exc.__cause__, KeyboardInterrupt):
                raise KeyboardInterrupt from None
            if self._fired:
                raise QueryTimeout(f"statement stopped after the {self._seconds:g} s timeout") from None
            raise
        finally:
            with self._cond:
                self._deadline = None

    def cancel(self) -> None:
        """Interrupt the running statement now (Ctrl-C); any thread may call it."""
        self._cancelled = True
        self._interrupt()

    def close(self) -> None:
        with _OPEN_LOCK:
            _OPEN.discard(self)
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._fired = True
                self._deadline = None
                self._interrupt()


def interrupt_all() -> int:
    """Interrupt the running statement (if any) of every open embedded connection; returns
    how many connections were asked. Safe to call from any thread."""
    with _OPEN_LOCK:
        watchdogs = list(_OPEN)
    for watchdog in watchdogs:
        watchdog.cancel()
    return len(watchdogs)


def abandon_on_interrupt(connection: object, fileno: Callable[[], int | None]) -> None:
    """On Ctrl-C (`abandon_all`), shut down the socket of `connection`, a server's client, whose
    descriptor `fileno` reads (None once the driver closed it). `fileno` must not hold
    `connection` itself: the entry goes when `connection` does, or with `forget`."""
    with _OPEN_LOCK:
        _SOCKETS[connection] = fileno


def forget(connection: object) -> None:
    """`connection` is closed: nothing of it to abandon any more."""
    with _OPEN_LOCK:
        _SOCKETS.pop(connection, None)


def abandon_all() -> int:
    """Shut down (both ways) the socket of every open server connection; returns how many. A
    client blocked on one, in any thread, sees the connection end at once, and so does every
    later read or write. Shut down through a descriptor of our own (`dup`): the driver's stays
    its to close. Safe to call from any thread."""
    with _OPEN_LOCK:
        readers = list(_SOCKETS.values())
    done = 0
    for fileno in readers:
        try:
            fd = fileno()
            if fd is None or fd < 0:
                continue
            own = os.dup(fd)
        except Exception:  # noqa: BLE001 - closed meanwhile: nothing to abandon
            continue
        try:
            sock = socket.socket(fileno=own)
        except OSError:  # not a socket any more: its number was reused
            os.close(own)
            continue
        with sock:  # closes `own`
            try:
                sock.shutdown(socket.SHUT_RDWR)
                done += 1
            except OSError:  # no longer connected
                pass
    return done


@contextmanager
def interrupt_on_signals(signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """While inside, any of `signals` also interrupts every embedded statement and abandons
    every server connection's at once (see the module). Call from the main thread, after
    installing the Python handlers."""
    receiver, sender = socket.socketpair()
    sender.setblocking(False)
    previous = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False)
    wanted = {int(s) for s in signals}

    def watch() -> None:
        while True:
            try:
                data = receiver.recv(64)
            except OSError:
                return
            if not data:  # closed: leaving the context
                return
            if wanted.intersection(data):
                abandon_all()
                interrupt_all()

    thread = threading.Thread(target=helper(watch), name="tdebench-signal-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        sender.close()
        receiver.shutdown(socket.SHUT_RDWR)
        thread.join()
        receiver.close()
