"""A helper process of kb-ai's own: a fresh interpreter that imports one module of
kb-ai and serves it over two pipes (compiler/documents/isolation.py converts documents
in one, compiler/check_process.py checks model replies in another).

A fresh interpreter running the module, not multiprocessing's spawn (which runs the
caller's main script again: a script without a ``__main__`` guard would start itself,
and a bench or server imports far more than the helper needs) nor a fork (the caller
has threads whose locks a child would inherit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from multiprocessing.connection import Connection
from typing import Any


class Channel:
    """Both ends of the pipes to (or from) a helper process, as one connection."""

    def __init__(self, incoming: Connection, outgoing: Connection) -> None:
        self.incoming, self.outgoing = incoming, outgoing

    def send(self, obj: object) -> None:
        self.outgoing.send(obj)

    def recv(self) -> Any:
        return self.incoming.recv()

    def poll(self, timeout: float) -> bool:
        return self.incoming.poll(timeout)

    def close(self) -> None:
        self.incoming.close()
        self.outgoing.close()


def start_helper(module: str) -> tuple[subprocess.Popen, Channel]:
    """A new process running ``module.serve(read_fd, write_fd)``, and the channel to it.
    It has not necessarily started yet: what it sends first says it has."""
    from_parent, to_child = os.pipe()
    from_child, to_parent = os.pipe()
    path = os.pathsep.join(p for p in sys.path if p)
    env = {**os.environ, "PYTHONPATH": path}
    code = f"from {module} import serve; serve({from_parent}, {to_parent})"
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", code],
            pass_fds=(from_parent, to_parent),
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        for fd in (from_child, to_child):
            os.close(fd)
        raise
    finally:
        os.close(from_parent)
        os.close(to_parent)
    channel = Channel(Connection(from_child, writable=False),
                      Connection(to_child, readable=False))  # fmt: skip
    return process, channel


def helper_channel(read_fd: int, write_fd: int) -> Channel:
    """In the helper process: its channel to the caller. Ctrl-C is the caller's to handle
    (it reaches the whole process group), and what the helper prints goes to stderr, not
    into the caller's output (`compile --json`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Channel(Connection(read_fd, writable=False), Connection(write_fd, readable=False))


def stop_helper(process: subprocess.Popen, channel: Channel | None, *, kill: bool) -> int:
    """End a helper process (at once when ``kill``, else asked to return and given 5 s);
    returns its exit code."""
    if channel is not None:
        if not kill:
            try:
                channel.send(None)  # done: the process returns
            except (OSError, ValueError):
                kill = True
        channel.close()
    if not kill:
        try:
            return process.wait(5)
        except subprocess.TimeoutExpired:
            pass
    process.kill()
    return process.wait()
