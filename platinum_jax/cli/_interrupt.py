"""One interrupt policy for every command: Ctrl-C stops within seconds, says so in one line,
exits 130 and leaves no half-written output.

A Python signal handler only runs when the main thread returns to the interpreter, which a
long compiled call (an XLA sampling loop) may not do for minutes, and work still queued on
XLA's threads would be waited for at exit.  So the real process (``platinum-jax ...``) also
gets a watcher thread woken through :func:`signal.set_wakeup_fd`: on SIGINT it removes the
staging of every output in progress (the targets keep their previous contents), prints one
line and ends the process with ``os._exit(130)``, abandoning in-flight compiled work instead
of waiting on it.  Called in-process (``main([...])``, as tests do), Ctrl-C raises
``KeyboardInterrupt`` as usual and ``main`` turns it into the same line and exit code 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Iterator

__all__ = ["hard_stop", "interrupted_line"]

EXIT_CODE = 130
_once = threading.Lock()


# What an interrupted run of these commands keeps for the next one.
_KEPT = {"certify": "; finished judge calls are in its cache: rerun the same command to continue",
         "sweep": "; finished chunks are kept: rerun with --resume to continue"}


def interrupted_line(command: str) -> str:
    """The one line an interrupted command prints."""
    return (f"platinum-jax {command}: interrupted; its outputs were not written and --out is "
            f"as it was before this run{_KEPT.get(command, '')}")


def _stop(command: str) -> None:
    """Discard the outputs in progress, print one line, end the process (any thread)."""
    if not _once.acquire(blocking=False):
        return  # a second Ctrl-C while the first is being handled
    from platinum_jax._outputs import discard_in_flight

    with contextlib.suppress(Exception):
        discard_in_flight()  # waits for a swap under way, so nothing is left half-swapped
    # os.write, not print: the main thread may hold sys.stderr's lock.
    with contextlib.suppress(OSError):
        os.write(2, (interrupted_line(command) + "\n").encode())
    os._exit(EXIT_CODE)


def _watch(sock: socket.socket, command: str) -> None:
    while True:
        try:
            data = sock.recv(64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGINT in data:
            _stop(command)


@contextlib.contextmanager
def hard_stop(command: str) -> Iterator[None]:
    """Within the block, SIGINT ends the process as described above (main thread only; a
    process that inherited SIGINT ignored, such as a background job of a script, keeps
    ignoring it)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) == signal.SIG_IGN):
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: _stop(command))
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(reader, command), name="platinum-jax-ctrl-c",
                     daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous)
        writer.close()
        reader.close()
