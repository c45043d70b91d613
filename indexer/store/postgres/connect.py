"""Connections to the team store with bounded waits: a server that stops answering (a frozen host,
a network black hole, a postmaster stopped with SIGSTOP) costs a reader a structured
`store_unreachable` error within a bounded time, never a call that hangs for minutes.

* connecting: `connect_timeout` (CONNECT_TIMEOUT_S; psycopg's own default is over two minutes);
* an idle connection over TCP: keepalives (KEEPALIVES), so a peer gone from the network is noticed;
* each statement of a reader: the server's `statement_timeout` (READER_STATEMENT_TIMEOUT, unless
  the URL's `options`, PGOPTIONS, the role or the database set one), and the client's own
  deadline of that timeout plus ANSWER_GRACE_S — a frozen server cancels nothing, so the reader
  stops waiting itself: the connection's socket is shut down and the next request connects again.

The writer gets the connect timeout and the keepalives, never a statement timeout or deadline: its
first load's index builds and packing run for minutes, and a writer that waits out a frozen server
goes on when it thaws (or reconnects once the network says the connection is gone).

Whatever the URL says wins: `?connect_timeout=`, `keepalives*=`, `options=-c statement_timeout=…`
(0: no bound at all). PGCONNECT_TIMEOUT in the environment is libpq's and wins too.
"""

from __future__ import annotations

import os
import socket
import threading
import time

CONNECT_TIMEOUT_S = 5
KEEPALIVES = {"keepalives": "1", "keepalives_idle": "10", "keepalives_interval": "5", "keepalives_count": "3"}
READER_STATEMENT_TIMEOUT = "20s"   # a reader's statement: searches take milliseconds to a few seconds
ANSWER_GRACE_S = 5.0               # past the statement timeout, how long a reader still waits for the answer


def _options_name(options: str | None, name: str) -> bool:
    return bool(options) and name in options


def bounds(url: str) -> dict[str, str]:
    """The connection parameters to add to `url`: those it does not set itself."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    out: dict[str, str] = {}
    if "connect_timeout" not in given and not os.environ.get("PGCONNECT_TIMEOUT"):
        out["connect_timeout"] = str(CONNECT_TIMEOUT_S)
    out.update({k: v for k, v in KEEPALIVES.items() if k not in given})
    return out


def sets_statement_timeout(url: str) -> bool:
    """Whether the URL's `options` (or PGOPTIONS) choose the statement timeout themselves."""
    from psycopg.conninfo import conninfo_to_dict

    return (_options_name(str(conninfo_to_dict(url).get("options") or ""), "statement_timeout")
            or _options_name(os.environ.get("PGOPTIONS"), "statement_timeout"))


class _Watchdog:
    """One thread for every bounded connection of the process: a statement armed here that has
    not finished by its deadline has its connection's socket shut down, which ends the wait with
    an OperationalError at once (the connection is then unusable and is closed). It wakes at the
    earliest deadline only, not per statement."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, int]] = {}   # token -> (deadline, socket fd)
        self._fired: set[int] = set()
        self._next = 0
        self._target: float | None = None   # when the thread wakes next (None: waiting for work)
        self._thread: threading.Thread | None = None

    def arm(self, fd: int, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        with self._cond:
            self._next += 1
            token = self._next
            self._armed[token] = (deadline, fd)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="remembrancer-pg-deadline", daemon=True)
                self._thread.start()
            if self._target is None or deadline < self._target:
                self._cond.notify()
        return token

    def disarm(self, token: int) -> bool:
        """Stop watching; whether the deadline had passed (the socket was shut down)."""
        with self._cond:
            self._armed.pop(token, None)
            if token in self._fired:
                self._fired.discard(token)
                return True
            return False

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for token, (deadline, fd) in list(self._armed.items()):
                    if deadline <= now:
                        del self._armed[token]
                        self._fired.add(token)
                        _shut_down(fd)
                self._target = min((d for d, _ in self._armed.values()), default=None)
                self._cond.wait(None if self._target is None else max(0.0, self._target - now))


def _shut_down(fd: int) -> None:
    """End a connection's socket from another thread: the wait on it returns at once (end of file)."""
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        s.close()


_WATCHDOG = _Watchdog()
_CLASSES: dict = {}


def _classes():
    """(BoundedConnection, NoAnswer), made once psycopg is imported (it is optional)."""
    if not _CLASSES:
        import psycopg

        class NoAnswer(psycopg.OperationalError):
            """The server did not answer a statement within the reader's bound."""

        class BoundedConnection(psycopg.Connection):
            """A connection whose every wait on the server (a statement, BEGIN, COMMIT, a COPY)
            ends after `answer_within` seconds (None: no bound)."""

            answer_within: float | None = None

            def wait(self, gen, *args, **kwargs):
                bound = self.answer_within
                if bound is None:
                    return super().wait(gen, *args, **kwargs)
                try:
                    token = _WATCHDOG.arm(self.pgconn.socket, bound)
                except Exception:   # noqa: BLE001 — no socket (closed): psycopg says so itself
                    return super().wait(gen, *args, **kwargs)
                try:
                    return super().wait(gen, *args, **kwargs)
                except psycopg.OperationalError:
                    if _WATCHDOG.disarm(token):
                        self.close()
                        raise NoAnswer(f"the server did not answer within {bound:g} s (a frozen server or "
                                       "the network)") from None
                    raise
                finally:
                    if _WATCHDOG.disarm(token):   # answered as the deadline passed: the socket is gone anyway
                        self.close()

        _CLASSES.update(connection=BoundedConnection, no_answer=NoAnswer)
    return _CLASSES["connection"], _CLASSES["no_answer"]


def no_answer(e: BaseException) -> bool:
    """Whether `e` is a reader's statement that got no answer in time."""
    return bool(_CLASSES) and isinstance(e, _CLASSES["no_answer"])


def connect(url: str, *, reader: bool, **kwargs):
    """A psycopg connection to the store, its waits bounded as the module says. A reader's
    statements are bounded from its first (`SET search_path`, run by the caller) on; its
    statement_timeout is set, unless chosen elsewhere, and the client's deadline follows it."""
    import psycopg

    if not reader:
        return psycopg.connect(url, **bounds(url), **kwargs)
    cls, _ = _classes()
    conn = cls.connect(url, **bounds(url), **kwargs)
    conn.answer_within = _seconds(READER_STATEMENT_TIMEOUT) + ANSWER_GRACE_S
    try:
        if not sets_statement_timeout(url):   # the server's, role's or database's own setting wins too
            conn.execute("SELECT set_config('statement_timeout', %s, false)"
                          " WHERE current_setting('statement_timeout') = '0'", (READER_STATEMENT_TIMEOUT,))
        ms = int(conn.execute("SELECT setting FROM pg_settings WHERE name = 'statement_timeout'").fetchone()[0])
    except BaseException:
        conn.close()
        raise
    conn.answer_within = ms / 1000 + ANSWER_GRACE_S if ms else None
    return conn


def _seconds(value: str) -> float:
    return float(value.removesuffix("s"))
