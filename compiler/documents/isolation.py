"""Conversions in a process of their own, each under a time limit. A pathological file
(a PDF whose content streams loop, a deck of a million shapes) can hold a converter for
hours, and a Python thread cannot be stopped: the process can. It is started once and
serves conversion after conversion (the converters' imports are paid once, not per
file); a conversion over the limit kills it, fails that document, and the next
conversion starts a new one. A converter that crashes the process (a native library
on a damaged file) fails its document the same way, and never the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from compiler.documents.convert import ConvertOptions, convert_document
from compiler.documents.document import Document
from kb_ai.errors import DocumentError

START_SECONDS = 120.0  # for the process to start and import kb-ai (not counted per file)


class ConverterCrashError(RuntimeError):
    """The converter raised something that is not a document's fault (a bug): raised in
    the caller, with the converter process's traceback, as it would be in-process."""


class ConvertProcess:
    """Converts documents in a process of its own, each within ``timeout`` seconds.
    Use it as a context manager, or call :meth:`close`; safe to share between threads
    (conversions take turns)."""

    def __init__(self, timeout: float, target: Callable[..., Document] | None = None) -> None:
        self.timeout = timeout
        self.target = target or convert_document
        self._lock = threading.Lock()
        self._process: Any = None
        self._conn: _Channel | None = None

    def __enter__(self) -> ConvertProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def convert(self, data: bytes, name: str, options: ConvertOptions | None = None) -> Document:
        """The document, as convert_document gives it; a DocumentError when it takes
        longer than the limit or the converter process dies on it."""
        with self._lock:
            conn = self._ready()
            try:
                conn.send((self.target, data, name, options))
                if not conn.poll(self.timeout):
                    self._stop(kill=True)
                    raise DocumentError(
                        f"{name}: the conversion took longer than {self.timeout:g} s; raise "
                        "convert_timeout or split the file",
                        cause="timeout",
                    )
                reply = conn.recv()
                if reply[0] == "crash":  # its process ends on it (see serve)
                    self._stop(kill=True)
            except (EOFError, OSError) as exc:
                code = self._stop(kill=True)
                raise DocumentError(
                    f"{name}: the converter stopped while reading it (exit code {code}): the "
                    "file is probably damaged",
                    cause="corrupt",
                    hint="open it in its application and save it again",
                ) from exc
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "document":
            _, message, cause, hint = reply
            raise DocumentError(message, cause=cause, hint=hint)
        raise ConverterCrashError(f"converting {name} failed:\n{reply[1]}")

    def start(self) -> None:
        """Start the process now (else the first conversion starts it)."""
        with self._lock:
            self._ready()

    def close(self) -> None:
        with self._lock:
            self._stop(kill=False)

    @property
    def pid(self) -> int | None:
        """The converter process's id while it runs."""
        return self._process.pid if self._process is not None else None

    def _ready(self) -> _Channel:
        if self._process is not None and self._process.poll() is None and self._conn is not None:
            return self._conn
        self._stop(kill=True)
        # A fresh interpreter running this module, not multiprocessing's spawn (which runs
        # the caller's main script again: a script without a __main__ guard would start
        # itself) nor a fork (the caller has threads whose locks a child would inherit).
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        path = os.pathsep.join(p for p in sys.path if p)
        env = {**os.environ, "PYTHONPATH": path}
        code = f"from compiler.documents.isolation import serve; serve({from_parent}, {to_parent})"
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", code],
                pass_fds=(from_parent, to_parent),
                stdin=subprocess.DEVNULL,
                env=env,
            )
        finally:
            os.close(from_parent)
            os.close(to_parent)
        self._process = process
        self._conn = _Channel(Connection(from_child, writable=False),
                              Connection(to_child, readable=False))  # fmt: skip
        if not self._conn.poll(START_SECONDS):
            self._stop(kill=True)
            raise DocumentError(
                f"the converter process did not start within {START_SECONDS:g} s",
                cause="timeout",
                hint="the machine is overloaded; try again",
            )
        try:
            self._conn.recv()  # "ready"
        except (EOFError, OSError) as exc:
            code = self._stop(kill=True)
            raise ConverterCrashError(f"the converter process failed to start ({code})") from exc
        return self._conn

    def _stop(self, *, kill: bool) -> int | None:
        """End the process (at once when ``kill``); returns its exit code."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is None:
            return None
        if conn is not None:
            if not kill:
                try:
                    conn.send(None)  # done: the process returns
                except (OSError, ValueError):
                    kill = True
            conn.close()
        if not kill:
            try:
                return process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        process.kill()
        return process.wait()


class _Channel:
    """Both ends of the pipes to the converter process, as one connection."""

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


def convert_process(settings) -> AbstractContextManager[ConvertProcess | None]:  # noqa: ANN001
    """The converter a knowledge base's settings ask for, to use in a ``with`` block
    (it stops its process at the end): None (in-process) when convert_timeout is 0."""
    if settings.convert_timeout > 0:
        return ConvertProcess(settings.convert_timeout)
    return nullcontext(None)


def serve(read_fd: int, write_fd: int) -> None:
    """The converter process: one conversion after another until told to stop."""
    conn = _Channel(Connection(read_fd, writable=False), Connection(write_fd, readable=False))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    # what a converter prints must not mix into the caller's output (`compile --json`)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # A converter's bug (anything but a DocumentError) is not caught: it ends the process,
    # whose state is no longer trusted, and its traceback goes to the caller first, to be
    # raised there (ConverterCrashError); the next conversion starts a new process.
    sys.excepthook = partial(_report_crash, conn)
    conn.send(("ready",))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        target, data, name, options = job
        try:
            conn.send(("ok", target(data, name, options)))
        except DocumentError as exc:
            conn.send(("document", exc.message, exc.cause, exc.hint))


def _report_crash(
    conn: _Channel, kind: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    conn.send(("crash", "".join(traceback.format_exception(kind, exc, tb))))
