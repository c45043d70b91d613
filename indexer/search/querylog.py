"""The local query log and `remembrancer report`.

One JSON line per question asked through MCP or the CLI: when, which tool, the query, the top
result, the verdict, the latency and how fresh the index said it was. It never leaves the
machine (a file under the user's data dir, mode 0600), every string in it is redacted with the
policy in force (indexer/redact.py) — a broken policy means nothing is logged — then cut between
tokens (never half a token, which redaction would no longer see as one). When the policy changes
(a value added to the secret-hash file) the lines already written are redacted again, once: the
fingerprint of the policy they were last redacted under is kept beside the log (`.policy`). It is
opt-out: `[log] queries = false` in the config turns it off.

`report` answers what an operator wants from it: what is asked most, where the memory abstained
or came back empty (the gaps worth writing down), what is slow, and which calls failed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import re
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

from remembrancer.indexer.errors import cut_whole

log = logging.getLogger(__name__)

MAX_BYTES = 5 * 1024 * 1024    # then the file is rotated to queries.jsonl.1 (one generation kept)
QUERY_CHARS = 500
ERROR_CHARS = 300
DEFAULT_SLOW_MS = 1000.0
LOGGED_TOOLS = ("search", "history", "latest", "neighbors", "verify")
ABSTAINED = ("no_strong_match", "empty")


def default_path() -> Path:
    from remembrancer.indexer.config import data_dir

    return data_dir() / "logs" / "queries.jsonl"


def path_for(config) -> Path:
    return Path(config.query_log) if getattr(config, "query_log", None) else default_path()


class QueryLog:
    """Appends entries; thread-safe (MCP tools run on worker threads)."""

    def __init__(self, path: Path, redactor_source=None):
        self.path = Path(path)
        self.redactor_source = redactor_source
        self._lock = threading.Lock()
        self._scrubbed_for: str | None = None   # the policy the file's lines are known redacted under

    @classmethod
    def for_config(cls, config) -> "QueryLog | None":
        """The log this config asks for, or None when `[log] queries = false`."""
        if config is None or not getattr(config, "log_queries", True):
            return None
        from remembrancer.indexer.redact_policy import RedactorSource

        return cls(path_for(config), RedactorSource(config.redact))

    def record(self, tool: str, params: dict, out: dict | None = None, ms: float = 0.0,
               error: dict | None = None, client: str = "mcp") -> None:
        """Log one call. Never raises: a log problem must not fail a question."""
        try:
            entry = make_entry(tool, params, out, ms, error, client)
            redactor = None
            if self.redactor_source is not None:
                redactor = self.redactor_source.current()   # RedactionError: not logged
                entry = redactor.redact_obj(entry)
            line = json.dumps(_cut(entry), ensure_ascii=False) + "\n"
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with self._lock, _file_lock(self.path):
                if redactor is not None and self._scrubbed_for != redactor.policy_fingerprint():
                    self._scrubbed_for = scrub_if_changed(self.path, redactor)
                self._append(line)
        except Exception as e:
            log.debug("query log entry not written: %s", e)

    def _append(self, line: str) -> None:
        try:
            if self.path.stat().st_size > MAX_BYTES:
                os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        except FileNotFoundError:
            pass
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)


def _query_text(tool: str, params: dict) -> str:
    if tool == "history":
        q = str(params.get("entity") or "")
        return q + (f" / {params['topic']}" if params.get("topic") else "")
    if tool == "latest":
        t = params.get("terms")
        return " ".join(f'"{x}"' if " " in x else x for x in t) if isinstance(t, list) else str(t or "")
    if tool == "neighbors":
        return str(params.get("path") or "")
    if tool == "verify":
        return str(params.get("path") or params.get("text") or "")
    return str(params.get("query") or "")


def _rows(tool: str, out: dict) -> list[dict]:
    if tool == "search":
        return out.get("best_weak" if out.get("no_strong_match") else "results") or []
    if tool == "neighbors":
        return (out.get("outbound") or []) + (out.get("inbound") or [])
    if tool == "verify":
        return out.get("commits") or []
    return out.get("results") or []


def verdict_of(tool: str, out: dict) -> str:
    if tool == "search" and out.get("no_strong_match") and _rows(tool, out):   # nothing at all is "empty"
        return "no_strong_match"
    if tool == "neighbors":
        return "answered" if any(out.get(k) for k in ("outbound", "inbound", "unresolved", "similar")) else "empty"
    if not _rows(tool, out):
        return "empty"
    if tool == "latest" and out.get("relaxed"):
        return "relaxed"
    return "answered"


def _top(tool: str, out: dict) -> str | None:
    rows = _rows(tool, out)
    if not rows:
        return None
    r = rows[0]
    if tool == "verify":
        return f"{r.get('sha')}: {r.get('verdict')}"
    path = r.get("path") or r.get("source") or r.get("target")
    return f"{path} § {r['heading']}" if r.get("heading") else path


def make_entry(tool: str, params: dict, out: dict | None, ms: float, error: dict | None, client: str) -> dict:
    filters = {k: v for k, v in params.items()
               if v not in (None, "", [], False) and k not in ("query", "entity", "terms", "text", "path_or_text")
               and not (tool in ("neighbors", "verify") and k == "path")}
    entry = {
        "ts": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
        "tool": tool, "client": client, "query": _query_text(tool, params),
        "latency_ms": round(float(ms), 1),
    }
    if filters:
        entry["params"] = filters
    if error is not None:
        entry.update(verdict="error", error={"code": error.get("code"), "message": str(error.get("message", ""))})
        return entry
    out = out or {}
    entry.update(verdict=verdict_of(tool, out), results=len(_rows(tool, out)), top=_top(tool, out))
    idx = out.get("index") or {}
    if idx.get("verdict"):
        entry["index"] = idx["verdict"]
    return entry


def _cut(entry: dict) -> dict:
    """The entry's free text cut to size after redaction, between tokens (errors.cut_whole)."""
    entry["query"] = cut_whole(str(entry.get("query", "")), QUERY_CHARS)
    if isinstance(entry.get("error"), dict):
        entry["error"]["message"] = cut_whole(str(entry["error"].get("message", "")), ERROR_CHARS)
    return entry


@contextlib.contextmanager
def _file_lock(path: Path):
    """Held while a process appends, rotates or scrubs the log (MCP servers and the CLI share
    it): a line appended during a scrub would go to the file the scrub replaces."""
    fd = os.open(path.with_name(path.name + ".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _policy_file(path: Path) -> Path:
    return path.with_name(path.name + ".policy")


def scrub_if_changed(path: Path, redactor) -> str:
    """Redact the log's lines (both generations) again if they were last redacted under another
    policy — a value just added to the secret-hash file leaves the log too — and record this
    policy's fingerprint beside the log. Returns the fingerprint."""
    fp = redactor.policy_fingerprint()
    marker = _policy_file(path)
    try:
        if marker.read_text().strip() == fp:
            return fp
    except OSError:
        pass
    for p in (path.with_name(path.name + ".1"), path):
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        lines = []
        for line in text.splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                lines.append(redactor.redact_text(line))
                continue
            lines.append(json.dumps(_cut(redactor.redact_obj(e)) if isinstance(e, dict) else redactor.redact_obj(e),
                                    ensure_ascii=False))
        _write_private(p, "".join(x + "\n" for x in lines))
    if path.parent.is_dir():
        _write_private(marker, fp + "\n")
    return fp


def _write_private(p: Path, text: str) -> None:
    """Replace `p` with `text` (mode 0600), atomically: a crash leaves the old or the new file."""
    tmp = p.with_name(p.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, p)


# -- reading and reporting -------------------------------------------------------------------------

def read_redacted(path: Path, redactor, since: str | None = None) -> list[dict]:
    """`read_entries`, every string redacted under the policy in force (a value listed since the
    line was written is not shown), the file itself scrubbed if it can be."""
    try:
        with _file_lock(path):
            scrub_if_changed(path, redactor)
    except OSError as e:   # a log someone else owns (or no log yet): still shown redacted
        log.debug("query log not scrubbed: %s", e)
    return [redactor.redact_obj(e) for e in read_entries(path, since)]


def read_entries(path: Path, since: str | None = None) -> list[dict]:
    """Entries of the log (and its rotated generation), oldest first; bad lines are skipped."""
    entries = []
    for p in (path.with_name(path.name + ".1"), path):
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        for line in text.splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(e, dict) and isinstance(e.get("ts"), str) and (not since or e["ts"][:10] >= since):
                entries.append(e)
    entries.sort(key=lambda e: e["ts"])
    return entries


def _norm(q: str) -> str:
    return re.sub(r"\s+", " ", q.strip()).casefold()


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))]


def summarise(entries: list[dict], slow_ms: float = DEFAULT_SLOW_MS, top: int = 10) -> dict:
    """Most asked, abstentions, slow queries, errors, latency by tool."""
    by_tool = Counter(e.get("tool", "?") for e in entries)
    asked: dict[tuple, dict] = {}
    for e in entries:
        key = (e.get("tool"), _norm(e.get("query", "")))
        a = asked.setdefault(key, {"tool": key[0], "query": e.get("query", ""), "count": 0, "abstained": 0})
        a["count"] += 1
        a["last_verdict"] = e.get("verdict")
        a["last_top"] = e.get("top")
        if e.get("verdict") in ABSTAINED:
            a["abstained"] += 1
    most = sorted(asked.values(), key=lambda a: (-a["count"], a["query"]))[:top]
    gaps = sorted((a for a in asked.values() if a["abstained"]), key=lambda a: (-a["abstained"], a["query"]))[:top]
    slow = sorted((e for e in entries if float(e.get("latency_ms") or 0) >= slow_ms),
                  key=lambda e: -float(e.get("latency_ms") or 0))[:top]
    errors = Counter((e.get("tool"), (e.get("error") or {}).get("code"), (e.get("error") or {}).get("message"))
                     for e in entries if e.get("verdict") == "error")
    lat: dict[str, list[float]] = defaultdict(list)
    for e in entries:
        lat[e.get("tool", "?")].append(float(e.get("latency_ms") or 0))
    verdicts = Counter(e.get("verdict") for e in entries)
    return {
        "queries": len(entries),
        "first": entries[0]["ts"] if entries else None,
        "last": entries[-1]["ts"] if entries else None,
        "by_tool": dict(by_tool.most_common()),
        "verdicts": dict(verdicts.most_common()),
        "most_asked": most,
        "abstentions": gaps,
        "abstention_rate": round(sum(verdicts[v] for v in ABSTAINED) / len(entries), 3) if entries else 0.0,
        "slow_ms": slow_ms,
        "slow": [{"ts": e["ts"], "tool": e.get("tool"), "query": e.get("query", ""),
                  "latency_ms": e.get("latency_ms")} for e in slow],
        "errors": [{"tool": t, "code": c, "message": m, "count": n} for (t, c, m), n in errors.most_common(top)],
        "latency_ms": {t: {"p50": _pct(v, 0.5), "p95": _pct(v, 0.95), "max": max(v)} for t, v in lat.items()},
        "stale_answers": sum(1 for e in entries if e.get("index") == "stale"),
    }


def format_report(rep: dict, path: Path | None = None) -> str:
    if not rep["queries"]:
        return f"no queries logged yet{f' in {path}' if path else ''}"
    lines = [f"{rep['queries']} queries from {rep['first'][:16]} to {rep['last'][:16]}"
             + (f" ({path})" if path else ""),
             "by tool: " + ", ".join(f"{t} {n}" for t, n in rep["by_tool"].items()),
             "verdicts: " + ", ".join(f"{v} {n}" for v, n in rep["verdicts"].items())
             + f"; abstention rate {rep['abstention_rate']:.0%}"]
    if rep["stale_answers"]:
        lines.append(f"{rep['stale_answers']} answers came from a STALE index")
    lines.append("\nmost asked:")
    lines += [f"  {a['count']:>4}×  [{a['tool']}] {a['query']}  → {a.get('last_top') or a.get('last_verdict')}"
              for a in rep["most_asked"]]
    lines.append("\nabstentions (no strong match or nothing found — gaps worth writing down):")
    lines += [f"  {a['abstained']:>4}×  [{a['tool']}] {a['query']}" for a in rep["abstentions"]] or ["  none"]
    lines.append(f"\nslow (≥ {rep['slow_ms']:.0f} ms):")
    lines += [f"  {s['latency_ms']:>8.0f} ms  [{s['tool']}] {s['query']}  ({s['ts'][:16]})" for s in rep["slow"]] \
        or ["  none"]
    lines.append("\nlatency by tool: " + "; ".join(f"{t} p50 {v['p50']:.0f} ms, p95 {v['p95']:.0f} ms"
                                                  for t, v in rep["latency_ms"].items()))
    if rep["errors"]:
        lines.append("\nerrors:")
        lines += [f"  {e['count']:>4}×  [{e['tool']}] {e['code']}: {e['message']}" for e in rep["errors"]]
    return "\n".join(lines)


def timed(fn):
    """(result, milliseconds) of calling fn()."""
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1000
