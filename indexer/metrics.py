"""Prometheus textfile metrics, written after each ingest when `[metrics] textfile` is set.

node_exporter's textfile collector (or anything that reads the exposition format) picks the
file up; it is replaced atomically (temp file + rename) so a scrape never sees half of it.
Nothing is served over the network by remembrancer itself.

    remembrancer_documents / _sections / _chunks / _vectors     what is indexed now
    remembrancer_last_ingest_timestamp_seconds                  end of the last successful run
    remembrancer_last_ingest_duration_seconds                   how long it took
    remembrancer_last_ingest_success                            1 ok, 0 the last run failed
    remembrancer_ingest_failures_total                          failed runs (carried over from the file)
    remembrancer_head_indexed{root}                             1 when the indexed HEAD is the current HEAD
    remembrancer_head_lag_commits{root}                         commits on HEAD not indexed yet (-1 unknown)
    remembrancer_head_lag_seconds{root}                         HEAD commit time minus indexed commit time
    remembrancer_writer_fetch_ok                                team store writer: 1 its last git fetch worked
    remembrancer_writer_last_fetch_timestamp_seconds            team store writer: when a fetch last worked
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from pathlib import Path

from remembrancer.indexer.ingest import corpus

log = logging.getLogger(__name__)

_FAILURES_RE = re.compile(r"^remembrancer_ingest_failures_total(?:\{[^}]*\})?\s+([0-9.eE+]+)\s*$", re.M)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def previous_failures(path: Path) -> int:
    try:
        m = _FAILURES_RE.search(path.read_text(encoding="utf-8"))
        return int(float(m.group(1))) if m else 0
    except (OSError, ValueError):
        return 0


def head_lag(root_path: Path, indexed: str | None, current: str | None) -> tuple[int, int, float]:
    """(indexed?, commits behind, seconds behind) for one root; -1 where it cannot be told."""
    if current is None:
        return (1 if indexed is None else 0), 0, 0.0
    if indexed == current:
        return 1, 0, 0.0
    repo = corpus.open_repo(root_path)
    if repo is None or indexed is None:
        return 0, -1, -1.0
    try:
        import pygit2

        cur, old = pygit2.Oid(hex=current), pygit2.Oid(hex=indexed)
        ahead, _ = repo.ahead_behind(cur, old)
        seconds = float(repo[cur].commit_time - repo[old].commit_time)
        return 0, int(ahead), max(seconds, 0.0)
    except Exception:  # an indexed HEAD that no longer exists (history rewritten), odd repos
        return 0, -1, -1.0


def render(engine, report, error: BaseException | None, failures: int) -> str:
    counts = engine.catalog.counts()
    idx = _label(engine.dir.name)
    lab = f'{{index="{idx}"}}'
    out: list[str] = []

    def metric(name: str, kind: str, help_: str, rows: list[tuple[str, float]]) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in rows:
            v = f"{value:.3f}" if isinstance(value, float) and not value.is_integer() else f"{int(value)}"
            out.append(f"{name}{labels} {v}")

    metric("remembrancer_documents", "gauge", "Documents in the index.", [(lab, counts["documents"])])
    metric("remembrancer_sections", "gauge", "Sections in the index.", [(lab, counts["sections"])])
    metric("remembrancer_chunks", "gauge", "Full-text chunks in the index.", [(lab, counts["chunks"])])
    metric("remembrancer_vectors", "gauge", "Stored embeddings.", [(lab, counts["vectors"])])
    last = engine.catalog.get_meta("last_indexed_at")
    metric("remembrancer_last_ingest_timestamp_seconds", "gauge", "End of the last successful ingest (unix time).",
           [(lab, float(last) if last else 0.0)])
    if report is not None:
        metric("remembrancer_last_ingest_duration_seconds", "gauge", "Duration of the last successful ingest.",
               [(lab, float(report.seconds))])
    metric("remembrancer_last_ingest_success", "gauge", "1 if the last ingest succeeded, 0 if it failed.",
           [(lab, 0 if error is not None else 1)])
    metric("remembrancer_ingest_failures_total", "counter", "Ingest runs that failed.", [(lab, failures)])
    indexed_heads = json.loads(engine.catalog.get_meta("heads") or "{}")
    current = engine.current_heads()
    rows_i, rows_c, rows_s = [], [], []
    for r in engine.config.roots:
        ok, commits, seconds = head_lag(r.path, indexed_heads.get(r.name), current.get(r.name))
        rl = f'{{index="{idx}",root="{_label(r.name)}"}}'
        rows_i.append((rl, ok))
        rows_c.append((rl, commits))
        rows_s.append((rl, seconds))
    metric("remembrancer_head_indexed", "gauge", "1 when the indexed git HEAD is the current HEAD.", rows_i)
    metric("remembrancer_head_lag_commits", "gauge", "Commits on HEAD not indexed yet (-1 unknown).", rows_c)
    metric("remembrancer_head_lag_seconds", "gauge", "Commit time of HEAD minus that of the indexed HEAD.", rows_s)
    pulled = engine.catalog.get_meta("writer_pull") if engine.store.kind != "local" else None
    if pulled:   # a team store's writer: the lag above is against what it could fetch
        state = json.loads(pulled)
        metric("remembrancer_writer_fetch_ok", "gauge", "1 when the writer's last git fetch worked, 0 when it fails.",
               [(lab, 0 if state.get("error") else 1)])
        metric("remembrancer_writer_last_fetch_timestamp_seconds", "gauge", "When a git fetch last worked (unix time).",
               [(lab, float(state.get("ok_at") or 0.0))])
    return "\n".join(out) + "\n"


def write_textfile(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".remembrancer-", suffix=".prom.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def after_ingest(engine, report, error: BaseException | None) -> None:
    """Write the metrics file; a metrics problem is logged, never allowed to fail the ingest."""
    path = engine.config.metrics_textfile
    if not path:
        return
    path = Path(path)
    try:
        failures = previous_failures(path) + (1 if error is not None else 0)
        write_textfile(path, render(engine, report, error, failures))
    except Exception as e:
        log.warning("metrics textfile %s not written: %s", path, e)


def parse(text: str) -> dict[str, float]:
    """`name{labels}` → value, for tests and `doctor`-style checks."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out

