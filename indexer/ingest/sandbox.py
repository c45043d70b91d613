"""Large documents are redacted and parsed in a child process, under a CPU budget.

Python's `re` and the Markdown parser hold the GIL while they run, and a C regex call cannot be
interrupted: in the daemon, one slow document (megabytes on one line) would stall every request
thread and the SIGTERM handler with it. A child process does the work instead; the caller waits on
a pipe in short slices, so it can give up when the document's budget runs out (the document is
then indexed as plain text in parts, and past a second budget without its text, with a warning)
or when a stop is requested (the child is killed).
The budget counts the child's CPU seconds, not the wall clock: the child runs at a lower priority,
and on a busy machine it gets a small share of the cores, so a wall-clock budget gave up documents
(indexing them without their text) for the machine's load rather than for their own cost.
WAIT_MAX_S of wall clock is the backstop.
Small documents, the usual case, are prepared in-process: a child costs more than they do.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time

import psutil

LARGE_BYTES = 256 * 1024   # documents from this size on go to the child process
BUDGET_S = 30.0            # CPU seconds per document: redaction + parsing + chunking beyond this is given up
WAIT_MAX_S = 300.0         # wall seconds: however busy the machine, a document is not waited for longer
MEMORY_BYTES = 10**9       # the child's address-space limit (1 GB): past it, MemoryError, treated as over budget
POLL_S = 0.05              # how often the waiting caller checks its stop flag
_HEADER = struct.Struct("!Q")


class Stopped(Exception):
    """A stop was requested while a document was being prepared; the child was killed."""


class OverBudget(Exception):
    """The document took longer than its budget (or the child died); the child was killed."""


def _call(name: str, args: tuple):
    if name == "prepare":
        from remembrancer.indexer.ingest.document import prepare

        return prepare(*args)
    if name == "prepare_conversation":
        from remembrancer.indexer.ingest.conversation import prepare as prepare_conversation

        return prepare_conversation(*args)
    if name == "read_conversation":
        from remembrancer.indexer.ingest.conversation import read_back

        return read_back(*args)
    if name == "redact_and_parse":
        from remembrancer.indexer.ingest.document import redact_and_parse

        return redact_and_parse(*args)
    raise ValueError(f"unknown sandbox call {name!r}")


def prepare_large(worker: "Worker", args: tuple, stop: threading.Event | None = None):
    """ingest.prepare of a large document in `worker`, under the budget; past it, once more as
    plain text in parts (markdown.parse_plain: linear, so only redaction can still be too slow),
    under a second budget. OverBudget when both ran out."""
    try:
        return worker.call("prepare", args, stop=stop)
    except OverBudget:
        return worker.call("prepare", args + (True,), stop=stop)


def _read_exact(stream, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _background() -> None:
    """Run as background work: the daemon's request threads go first whenever they want a core.
    At nice 10 a busy child still keeps a core for the rest of a scheduler slice when a request
    thread wakes up; under SCHED_IDLE (Linux) it gives the core up at once. Elsewhere, nice 19."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.nice(19)
        except OSError:
            pass


def serve(stdin=None, stdout=None) -> None:
    """The child's loop (`python -m remembrancer.indexer.ingest.sandbox`): one pickled call per frame
    on stdin, its pickled result (or exception) as one frame on stdout."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    _background()
    try:  # one document must not take the machine's memory either (a parser's tokens cost ~100x the text)
        import resource

        limit = int(os.environ.get("REMEMBRANCER_SANDBOX_MEMORY_BYTES", MEMORY_BYTES))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exact(stdin, _HEADER.size))
            name, args = pickle.loads(_read_exact(stdin, size))
        except EOFError:
            return
        try:
            reply = ("ok", _call(name, args))
        except MemoryError:
            reply = ("error", OverBudget("memory"))
        except Exception as e:  # the caller re-raises it (ingest.Skip carries its warning)
            reply = ("error", e)
        out = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(_HEADER.pack(len(out)) + out)
        stdout.flush()


class Worker:
    """One child process, started on first use and restarted after it is killed; one call at a time."""

    def __init__(self, name: str = "remembrancer-sandbox"):
        self.name = name
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self.calls = 0
        self.kills = 0

    def _start(self) -> None:
        # A fresh interpreter, not a fork: forking a threaded daemon can copy a lock another thread
        # holds; and not multiprocessing's spawn, which re-runs the caller's __main__ script. -P: the
        # working folder (a daemon's is its client's project) must not lend it a `remembrancer` package.
        self._proc = subprocess.Popen([sys.executable, "-P", "-m", "remembrancer.indexer.ingest.sandbox"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
        self._cpu = psutil.Process(self._proc.pid)

    def _cpu_seconds(self) -> float:
        """The child's CPU time so far (user + system); 0 once it is gone (the pipe says why)."""
        try:
            t = self._cpu.cpu_times()
            return t.user + t.system
        except psutil.Error:
            return 0.0

    def call(self, name: str, args: tuple, *, budget_s: float | None = None,
             stop: threading.Event | None = None):
        budget_s = BUDGET_S if budget_s is None else budget_s
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            self.calls += 1
            payload = pickle.dumps((name, args), protocol=pickle.HIGHEST_PROTOCOL)
            try:
                self._proc.stdin.write(_HEADER.pack(len(payload)) + payload)
                self._proc.stdin.flush()
                kind, value = pickle.loads(self._receive(self._cpu_seconds() + budget_s, stop))
            except (OSError, EOFError, pickle.UnpicklingError):
                self._kill()
                raise OverBudget() from None  # the child died (out of memory, a signal)
        if kind == "error":
            raise value
        return value

    def _receive(self, cpu_deadline: float, stop: threading.Event | None) -> bytes:
        fd = self._proc.stdout.fileno()
        wall_deadline = time.monotonic() + WAIT_MAX_S
        buf = bytearray()
        need = _HEADER.size
        header_done = False
        while True:
            while len(buf) < need:
                if stop is not None and stop.is_set():
                    self._kill()
                    raise Stopped()
                if self._cpu_seconds() >= cpu_deadline or time.monotonic() > wall_deadline:
                    self._kill()
                    raise OverBudget()
                ready, _, _ = select.select([fd], [], [], POLL_S)
                if ready:
                    chunk = os.read(fd, max(need - len(buf), 1 << 16))
                    if not chunk:
                        raise EOFError
                    buf += chunk
            if header_done:
                return bytes(buf[_HEADER.size:need])
            (size,) = _HEADER.unpack(buf[:_HEADER.size])
            need, header_done = _HEADER.size + size, True

    def _kill(self) -> None:
        self.kills += 1
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(5)
            for stream in (self._proc.stdin, self._proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        self._proc = None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._kill()
                self.kills -= 1


if __name__ == "__main__":  # run from the importable module, so what it pickles names remembrancer.indexer.ingest.sandbox
    from remembrancer.indexer.ingest.sandbox import serve as _serve

    _serve()
