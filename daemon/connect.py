"""How a client (the CLI or the MCP server) reaches the index: the user's daemon (one serves
every corpus: each request names its corpus by its roots), a daemon started on demand, the
engine in-process, or a team store's reader — chosen in one place, `connect`.

Every backend answers `call(method, **params)` with the same dicts, so callers never care which
one they got — except that the in-process answer says so in its freshness verdict.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from remembrancer import build
from remembrancer.indexer import writelock
from remembrancer.indexer.answers import Freshness
from remembrancer.indexer.config import CODE, COMMITS, CONVERSATIONS, NOTES, Config, data_dir, ensure_data_dir, private_data_dir, socket_path
from remembrancer.indexer.errors import UserError
from remembrancer.wire import Client, DaemonError, DaemonUnavailable, config_identity, ping


if TYPE_CHECKING:   # the engine is imported only where a backend needs it (a client stays light)
    from remembrancer.indexer.engine import ReadView

log = logging.getLogger(__name__)

START_TIMEOUT_S = 60.0
DEFAULT_IDLE_EXIT_S = 600.0
INITIAL_INDEX_WAIT_S = 20.0   # a daemon just opened a never-indexed corpus: wait this long for its first pass
STOP_WAIT_S = 30.0   # a daemon of another build, asked to stop, is waited for this long (it closes its corpora)
RESTART_SERVICE = {"systemd": "`systemctl --user restart remembrancer.service`",
                   "launchd": "`launchctl kickstart -k gui/$(id -u)/dev.remembrancer.daemon`"}


class OtherBuild(UserError):
    """A daemon of another build that this client does not use, and does not replace: one that
    serves until stopped (`remembrancer serve`, a service), or one of the installed build when this
    process is the old one. `status` is its status answer (status and doctor show it)."""

    def __init__(self, sock: Path, status: dict, message: str, hint: str):
        super().__init__(message, hint=hint, code="daemon_other_build")
        self.sock, self.status = sock, status


def this_build() -> dict:
    return {"version": build.version(), "fingerprint": build.fingerprint()}


def daemon_build(status: dict) -> dict | None:
    """The build a daemon's status reports (None: a daemon older than build identities)."""
    return (status.get("daemon") or {}).get("build")


def same_build(status: dict) -> bool:
    return (daemon_build(status) or {}).get("fingerprint") == build.fingerprint()


def restart_hint(daemon: dict) -> str:
    """How the user restarts a daemon that serves until stopped, with the installed code."""
    way = RESTART_SERVICE.get(daemon.get("supervisor") or "")
    if way:
        return f"restart the service: {way}"
    return ("`remembrancer stop` (then `remembrancer serve` again, if you ran it), or for the service: "
            + RESTART_SERVICE["launchd" if sys.platform == "darwin" else "systemd"])


def of_this_build(sock: Path, status: dict) -> tuple[Path, dict]:
    """(socket, status) of a daemon of this process's build (remembrancer/build.py) at `sock`.

    A daemon of another build answers with that build's code: another redaction, other freshness
    rules — after an upgrade, the old code. So:

    * one that exits by itself when idle (every daemon a client starts on demand) is stopped and a
      new one of this build started in its place, on the same socket with the same default roots,
      said on stderr: its clients lose nothing but a reconnect;
    * one that serves until stopped (`remembrancer serve` in a terminal, a service) is somebody's
      choice to run: it is not stopped behind their back (a service stopped cleanly would not be
      started again by its manager). OtherBuild, naming the command that restarts it; `connect`
      then answers in-process, read-only, every answer saying why;
    * when the daemon runs the code installed now and this process does not, this process is the
      old build (an MCP server started before the upgrade): OtherBuild, telling it to restart — a
      daemon of the right build is never replaced by an older one."""
    if same_build(status):
        return sock, status
    d = status.get("daemon") or {}
    pid = d.get("pid", "?")
    theirs, ours = build.named(d.get("build")), build.named(this_build())
    fp = (d.get("build") or {}).get("fingerprint")
    if fp and fp == build.on_disk():
        raise OtherBuild(sock, status, f"this process runs {ours}, but the installed one is {theirs}, which the "
                         f"running daemon (pid {pid}) runs: remembrancer was upgraded after this process started",
                         hint="restart this process (an MCP server: reconnect it from your MCP client, or start "
                              "a new session)")
    if d.get("idle_exit_s") is None:
        raise OtherBuild(sock, status, f"the running daemon (pid {pid}) runs {theirs}, not this {ours} (an upgrade "
                         "since it started); it serves until stopped, so it is left running, and not used",
                         hint=restart_hint(d))
    print(f"remembrancer: the daemon (pid {pid}) on {sock} ran {theirs}, not this {ours}: stopping it and "
          "starting one of this build in its place", file=sys.stderr)
    _stop(sock, pid)
    sock, status = _spawn(list(d.get("default_roots") or []), sock, d.get("idle_exit_s"))
    if not same_build(status):   # `python -m remembrancer` here is not the code of this process
        d = status.get("daemon") or {}
        raise OtherBuild(sock, status, f"the daemon started now (pid {d.get('pid', '?')}) runs "
                         f"{build.named(d.get('build'))}, not this process's {ours}: {sys.executable} "
                         "-m remembrancer runs other code than this process", hint="restart this process")
    return sock, status


def _stop(sock: Path, pid) -> None:
    """Ask the daemon on `sock` to stop and wait until its process is gone (its locks with it)."""
    try:
        with Client(sock, timeout=5.0) as c:
            c.call("stop")
    except (DaemonUnavailable, DaemonError):
        pass   # gone already, or going
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if not (isinstance(pid, int) and process_alive(pid)) and ping(sock, timeout=0.5) is None:
            return
        time.sleep(0.1)
    raise DaemonUnavailable(f"the daemon of another build (pid {pid}) did not stop within {STOP_WAIT_S:.0f}s")


class DaemonBackend:
    kind = "daemon"

    def __init__(self, sock: Path, status: dict, roots: list[str] | None = None,
                 conversations: list[str] | None = None, without_notes: bool = False, code: list[str] | None = None):
        self.sock = sock
        self.status_at_connect = status
        self.roots = roots   # the corpus every request names (None: the daemon's default corpus)
        self.conversations = conversations   # the session's conversation folders (a corpus of their own)
        self.code = code     # the session's source folders (a corpus of their own)
        self.without_notes = without_notes   # a session of conversations alone: never the daemon's default notes
        self.client = Client(sock, timeout=120.0)

    def call(self, method: str, **params) -> dict:
        if self.roots and method != "notify":
            params = {**params, "roots": self.roots}
        if self.conversations and method != "notify":
            params = {**params, "conversations": self.conversations}
            if self.without_notes and method != "status":
                params["without_notes"] = True
        if self.code and method not in ("notify", "status"):
            params = {**params, "code": self.code}
        if method not in ("notify", "stop", "forget"):   # answered under these settings, or refused (wire)
            params = {**params, "config": config_identity()}
            if method != "status":
                params["build"] = build.fingerprint()   # answered by this build's code, or refused (wire)
        try:
            out = self.client.call(method, **params)
        except DaemonError as e:
            err = e.error
            raise UserError(err.get("message", "daemon error"), param=err.get("param"),
                            options=err.get("valid_options"), hint=err.get("hint", ""),
                            code=err.get("code", "daemon_error"), index=err.get("index")) from None
        if method not in ("notify", "stop", "forget") and self.client.build != build.fingerprint():
            # another daemon took the socket since this one was checked (an older one sends no build)
            raise UserError(f"the daemon on {self.sock} is now another build ({self.client.build or 'an older one'}) "
                            f"than this client's ({build.fingerprint()})", code="build_mismatch",
                            hint="run it again: a client checks the daemon's build when it connects")
        return out

    def close(self) -> None:
        self.client.close()


class LocalBackend:
    """The engine in this process. Writable: refreshed before each search (the CLI without a
    daemon). Read-only: the last index as it is, and every answer says it may be stale."""

    kind = "local"

    def __init__(self, config: Config, readonly: bool, reason: str = "", embedder=None, progress=None):
        from remembrancer.indexer.engine import Engine

        self.config = config
        self.readonly = readonly
        self.reason = reason
        try:
            self.engine = Engine(config, readonly=readonly, embedder=embedder)
        except Exception as e:
            if readonly or not self._fall_back(e):
                raise
            self.engine = Engine(config, readonly=True, embedder=embedder)
        self.progress = progress
        self.last_report = None
        self.other_daemon: dict | None = None   # the status of a daemon of another build left running (connect)
        self._beside: dict[str, LocalBackend] = {}   # the engines of the corpora beside the notes (_other)
        self._log_config: Config | bool | None = None   # its corpus (_commit_config); False: no repository

    def _fall_back(self, e: Exception) -> bool:
        """A full or read-only disk under the index: answer read-only from the index as it is,
        every answer saying why it is stale (catalog.store_fault). False for any other failure."""
        from remembrancer.indexer.store.local.catalog import store_fault

        fault = store_fault(e, self.config.index_dir())
        if fault is None:
            return False
        log.info("%s", fault)   # every answer's verdict says it
        self.readonly, self.reason = True, str(fault)
        return True

    def refresh(self):
        if not self.readonly:
            try:
                self.last_report = self.engine.refresh(progress=self.progress)
            except Exception as e:
                if not self._fall_back(e):
                    raise
                from remembrancer.indexer.engine import Engine

                embedder = self.engine.core.loaded_embedder
                try:
                    self.engine.close()
                except Exception:   # its connections end with the process anyway
                    log.debug("closing the writer after a store fault failed", exc_info=True)
                self.engine = Engine(self.config, readonly=True, embedder=embedder)
        return self.last_report

    def freshness(self, view: ReadView) -> Freshness:
        """The verdict on an answer of this engine: "re-checked against the files just now" only when
        it was — refreshed before this answer, or (an answer that does not refresh: `status`) found
        level with the files by Engine.behind, which counts what a pass has not read yet."""
        st = view.status()
        if self.readonly:
            return Freshness.judged(st, "stale", reason=self.reason or "daemon down: answering read-only "
                                    "from the last index; changes since then are not seen")
        problem = self.engine.redaction.problem() or st.unavailable_roots()
        if problem is None and self.last_report is None:
            roots = " ".join(f"--root {r.path}" for r in self.config.roots)
            problem = self.engine.behind(view.wall if view.scope else None).reason(f"remembrancer index {roots}")
        if problem is None and self.engine.core.loaded_embedder is not None:
            problem = self.engine.contract_problem()
        if problem:
            return Freshness.judged(st, "stale", reason=problem)
        if st.vectors_waiting:   # no daemon here to embed them when the model is back: the next index run does
            return Freshness.judged(st, "stale", reason=f"{st.vectors_waiting} passage texts have no vector yet "
                                    "(the model was unavailable): `remembrancer index` embeds them")
        return Freshness.judged(st, "fresh", detail="re-checked against the files just now")

    def call(self, method: str, **params) -> dict:
        from remembrancer.indexer import api# the engine's: a client answered by the daemon never imports it

        has_talks = bool(self.config.conversations)
        if method in api.READ_METHODS:   # notes, conversations, commits or all (indexer/search/across.py)
            return api.read_across(method, params, self._answer,
                                   self._reader(CONVERSATIONS, self.config.conversation_config) if has_talks else None,
                                   self._reader(COMMITS, self._commit_config) if self._commit_config() else None,
                                   self._reader(CODE, self.config.code_config) if self.config.code else None)
        if method in ("notify", "reindex") and has_talks and not self.readonly:
            self._other(CONVERSATIONS, self.config.conversation_config).refresh()
        return self._answer(method, params)

    def _commit_config(self) -> Config | None:
        """The corpus of the commits of the notes' repositories; None: they are in none."""
        if self._log_config is None:
            from remembrancer.indexer.ingest.commit_log import commits_config

            self._log_config = (commits_config(self.config) if self.config.kind == NOTES else None) or False
        return self._log_config or None

    def _other(self, kind: str, config: Callable[[], Config | None]) -> "LocalBackend":
        """The engine of a corpus beside the notes (conversations, commits, code), opened when first
        asked: by then the notes' engine has loaded the model if the request needed it, and they share it."""
        if kind not in self._beside:
            self._beside[kind] = LocalBackend(config(), self.readonly, self.reason,
                                              embedder=self.engine.core.loaded_embedder, progress=self.progress)
        return self._beside[kind]

    def _reader(self, kind: str, config: Callable[[], Config | None]):
        """A read of that corpus, for api.read_across (its engine opened when first read)."""
        return lambda m, p: self._other(kind, config)._answer(m, p)

    def _answer(self, method: str, params: dict) -> dict:
        from remembrancer.indexer import api

        if method in api.READ_METHODS:
            self.refresh()
        out = api.answer_in_process(self.engine, method, params, self.freshness)
        if out is not None:
            return out
        if method in ("notify", "reindex"):
            if self.readonly:
                raise UserError("no daemon is running to reindex", hint="run `remembrancer index`", code="no_daemon")
            return self.refresh().to_dict()
        raise UserError(f"{method} needs a running daemon", hint="start one with `remembrancer serve`", code="no_daemon")

    def close(self) -> None:
        for other in self._beside.values():
            other.close()
        self.engine.close()


def same_roots(status: dict, config: Config) -> bool:
    served = {r.get("path") for r in status.get("roots", [])}
    return served == {str(r.path) for r in config.roots}


def serves(status: dict, config: Config) -> bool:
    """Whether the daemon that answered `status` can serve this corpus: any corpus, if it is a
    multi-corpus daemon; else (an older daemon) only the roots it was started with."""
    return bool((status.get("daemon") or {}).get("multi_corpus")) or same_roots(status, config)


def backend_for(sock: Path, status: dict, config: Config) -> DaemonBackend:
    return DaemonBackend(sock, status, [str(r.path) for r in config.roots] or None,
                         [str(r.path) for r in config.conversations] or None,
                         without_notes=not config.roots and bool(config.conversations),
                         code=[str(r.path) for r in config.code] or None)


def data_dir_daemon() -> tuple[Path, dict] | None:
    """(socket, status) of the daemon that holds the data dir, wherever its socket is: a client
    with another environment (Claude Desktop's bare one has no XDG_RUNTIME_DIR) computes another
    socket path for the same index, and must use that daemon, not become a second writer."""
    info = writelock.holder(data_dir() / writelock.DAEMON_LOCK)
    if not info or not info.get("socket"):
        return None
    sock = Path(info["socket"])
    st = ping(sock)
    if st is None or (st.get("daemon") or {}).get("pid") != info["pid"]:   # a dead daemon's leftover
        return None
    return sock, st


def running_daemon(sock: Path | None = None) -> tuple[Path, dict] | None:
    """(socket, status) of the daemon on `sock` (default: the user's socket), else of the data dir's."""
    sock = Path(sock or socket_path())
    st = ping(sock)
    return (sock, st) if st is not None else data_dir_daemon()


def find_daemon(config: Config, sock: Path | None = None) -> DaemonBackend | None:
    """The running daemon if it serves this corpus — of this build: one of another build is
    replaced, or OtherBuild (of_this_build)."""
    found = running_daemon(sock)
    if found is None:
        return None
    sock, st = of_this_build(*found)
    if not serves(st, config):
        log.info("daemon on %s is an older one serving other roots; not using it", sock)
        return None
    return backend_for(sock, st, config)


def start_daemon(config: Config, sock: Path | None = None, idle_exit_s: float = DEFAULT_IDLE_EXIT_S) -> DaemonBackend:
    """Start a daemon in the background for this corpus (it exits after `idle_exit_s` without clients)."""
    sock, st = _spawn([str(r.path) for r in config.roots], Path(sock or socket_path()), idle_exit_s)
    if not serves(st, config):
        raise DaemonUnavailable(f"an older daemon for other roots already serves {sock}")
    sock, st = of_this_build(sock, st)   # another client of another build may have won the race
    return backend_for(sock, st, config)


def _spawn(roots: list[str], sock: Path, idle_exit_s: float | None) -> tuple[Path, dict]:
    """Start `remembrancer serve` in the background and wait until a daemon answers: (socket, status)
    — of the one started, or of the one another client started first."""
    log_dir = ensure_data_dir()   # UserError naming REMEMBRANCER_DATA_DIR, not a silent fallback
    # -P: the client's folder (the project an agent works in) must not lend the daemon a `remembrancer` package
    cmd = [sys.executable, "-P", "-m", "remembrancer", "serve"]
    if idle_exit_s is not None:
        cmd += ["--idle-exit", str(idle_exit_s)]
    for r in roots:
        cmd += ["--root", r]
    env = {**os.environ, "REMEMBRANCER_SOCKET": str(sock)}
    with open(os.open(log_dir / "daemon.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as logf:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                start_new_session=True, env=env)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        st = ping(sock, timeout=1.0)
        if st is None and proc.poll() == 2:   # refused: a daemon on another socket holds the data dir
            sock, st = data_dir_daemon() or (sock, None)
        if st is not None:
            return sock, st
        # Exit code 2 with a daemon starting elsewhere: another client won the race; wait for it.
        if proc.poll() is not None and not (proc.returncode == 2 and (_lock_held(sock) or _data_dir_held())):
            raise DaemonUnavailable(f"daemon exited with code {proc.returncode}; see {log_dir / 'daemon.log'}")
        time.sleep(0.1)
    raise DaemonUnavailable(f"daemon did not answer within {START_TIMEOUT_S:.0f}s; see {log_dir / 'daemon.log'}")


def wait_for_first_index(link, timeout_s: float = INITIAL_INDEX_WAIT_S) -> None:
    """A daemon just started on a corpus never indexed has nothing to describe yet: give its first
    pass a little time, so the tool descriptions show the corpus rather than an empty index."""
    if link.kind != "daemon":
        return
    deadline = time.monotonic() + timeout_s
    while True:
        st = link.call("status")
        fr = st.get("freshness") or {}
        building = st.get("documents", 0) == 0 and (st.get("last_indexed_at") is None
                                                    or fr.get("verdict") == "catching_up")
        if not building:
            return
        if time.monotonic() >= deadline:
            log.warning("the first index is still being built; tool descriptions show what is there now")
            return
        time.sleep(0.25)


def process_alive(pid: int) -> bool:
    """A running process (a zombie — exited, not yet reaped — counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def _lock_held(sock: Path) -> bool:
    """Whether some daemon holds the socket's lock (it may still be loading before it binds)."""
    import fcntl

    try:
        with open(str(sock) + ".lock", "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def _data_dir_held() -> bool:
    """Whether a live process holds the data dir's daemon lock (it may still be loading)."""
    return writelock.writing(data_dir() / writelock.DAEMON_LOCK) is not None


def connect(config: Config | None, *, start: bool, readonly_fallback: bool, store: str | None = None,
            root_args: list[str] | None = None, sock: Path | None = None,
            idle_exit_s: float = DEFAULT_IDLE_EXIT_S, progress=None):
    """Who answers a client (the CLI, the MCP server) — the one place that decides it:

    * `store` (a team store's postgresql:// URL): the store's reader (indexer/team.py), never a
      daemon or a local index; its roots are `root_args` (the reader's checkout) or the store's
      own names, and `config` is not used;
    * else a running daemon that serves this corpus; else (start=True) one started now; else the
      engine in-process (read-only when `readonly_fallback`).

    With no roots given or configured, whatever daemon runs is the answer."""
    if store is not None:   # an empty or malformed URL is said as such (check_url), never a local index
        from remembrancer.indexer.store.postgres.store import check_url
        from remembrancer.indexer.team import TeamReader, reader_config   # the engine and psycopg: only for a store

        check_url(store)

        team_config, checkout = reader_config(store, root_args)
        return TeamReader(store, team_config, checkout=checkout)
    private_data_dir()   # every client start, the MCP server's included (config._make_private)
    if not config.roots:
        found = running_daemon(sock)
        if found is not None:
            found = of_this_build(*found)   # no roots: no index to answer from in-process
            return backend_for(*found, config) if config.conversations else DaemonBackend(*found)
        if config.conversations and start:   # conversations alone: they need the daemon
            return start_daemon(config, sock, idle_exit_s)
        raise UserError("no corpus roots given and no daemon running",
                        hint="pass --root DIR, or set roots = [\"~/notes\"] in the config file")
    try:
        found = find_daemon(config, sock)
    except OtherBuild as e:
        return _beside_other_build(config, e)
    if found is not None:
        return found
    if start:
        try:
            return start_daemon(config, sock, idle_exit_s)
        except (DaemonUnavailable, OSError) as e:
            log.warning("could not start a daemon (%s); answering in-process, read-only", e)
            if not readonly_fallback:
                raise UserError(f"could not start the daemon: {e}", code="no_daemon") from None
            return LocalBackend(config, readonly=True, reason=f"daemon could not start ({e}); answering "
                                "read-only from the last index")
    try:
        return LocalBackend(config, readonly=readonly_fallback, progress=progress)
    except writelock.Busy as e:   # `remembrancer index` is writing it: answer from the last index meanwhile
        return LocalBackend(config, readonly=True, reason=f"{e.message}; answering read-only from the last index")


def _beside_other_build(config: Config, e: OtherBuild) -> "LocalBackend":
    """A daemon of another build runs and is not ours to replace: this build's engine answers
    in-process, read-only, from the last index (this build's redaction applied again as it serves),
    each answer's verdict saying why; said on stderr once. `other_daemon`: the daemon's status."""
    try:
        local = LocalBackend(config, readonly=True, reason=f"{e.message}; answered in-process, read-only, from "
                             f"the last index — fix: {e.hint}")
    except UserError:
        raise e from None
    print(f"remembrancer: {e.message}; answering in-process, read-only — fix: {e.hint}", file=sys.stderr)
    local.other_daemon = e.status
    return local
