"""The corpora this user has indexed: one folder per corpus under `<data dir>/indexes/`, each
recording its roots (`roots.json`, written whenever a writable engine opens it; its mtime is when
the corpus was last used).

What `remembrancer corpora` lists and forgets, and how the MCP server tells a folder that is
already a corpus from one a client merely connected from (mcp_server/choose.py). Looking never
creates anything: not the data dir, not an index.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from remembrancer.indexer.config import data_dir
from remembrancer.indexer.errors import UserError
from remembrancer.indexer import writelock

log = logging.getLogger(__name__)

RECORD = "roots.json"
CATALOG = "catalog.sqlite3"


@dataclass
class Index:
    dir: Path
    roots: list[Path] | None   # None: an index made before roots were recorded
    kind: str = "notes"        # notes, conversations or commits (an index recorded before kinds were: notes)

    @property
    def name(self) -> str:
        return self.dir.name

    def holds(self, folder: Path) -> bool:
        return bool(self.roots) and any(folder == r or folder.is_relative_to(r) for r in self.roots)


def indexes_dir() -> Path:
    return data_dir() / "indexes"


def built(config) -> bool:
    """Whether this corpus has an index on disk (looked up without creating anything)."""
    return bool(config.roots) and (indexes_dir() / config.index_name() / CATALOG).exists()


def record(index_dir: Path, roots, kind: str = "notes") -> None:
    """Note the corpus's roots (and its kind, when not notes) beside its index and mark it used
    now (never fails an index run)."""
    f = index_dir / RECORD
    data: dict = {"roots": [str(r) for r in roots]}
    if kind != "notes":
        data["kind"] = kind
    text = json.dumps(data, ensure_ascii=False)
    try:
        if not f.is_file() or f.read_text(encoding="utf-8") != text:
            tmp = f.with_name(f"{RECORD}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, f)
        else:
            os.utime(f)
    except OSError as e:
        log.warning("could not record the roots of %s: %s", index_dir, e)


def mark_used(index_dir: Path, at: float | None = None) -> None:
    """The corpus was last used at `at` (a daemon closing it says when its last request came)."""
    f = index_dir / RECORD
    try:
        os.utime(f, (at or time.time(),) * 2)
    except OSError:
        pass


def known() -> list[Index]:
    """Every index on disk (a folder holding a catalog), by name."""
    base = indexes_dir()
    if not base.is_dir():
        return []
    out = []
    for d in sorted(base.iterdir()):
        if d.is_symlink() or not d.is_dir() or not (d / CATALOG).exists():
            continue
        roots, kind = None, "notes"
        try:
            data = json.loads((d / RECORD).read_text(encoding="utf-8"))
            roots = [Path(r) for r in data["roots"]]
            kind = str(data.get("kind") or "notes")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        out.append(Index(d, roots, kind))
    return out


def corpus_for(folders: list[Path]) -> list[Path] | None:
    """The roots of the indexed corpus that is these folders, or holds them all (the most specific
    one); None when none does. A folder becomes a corpus only when someone indexed it."""
    from remembrancer.indexer.config import Config, make_roots

    try:
        if built(Config(roots=make_roots(folders))):
            return [Path(f) for f in folders]
    except UserError:
        return None
    every = [i for i in known() if i.kind == "notes"]   # a repository's commits index is no notes corpus
    holding = [i for i in every if i.roots and all(i.holds(f) for f in folders)
               and all(r.is_dir() for r in i.roots)]
    if not holding:
        return None
    best = max(holding, key=lambda i: max(len(str(r)) for r in i.roots if any(f.is_relative_to(r) for f in folders)))
    return best.roots


def describe(index: Index) -> dict:
    """One line of `remembrancer corpora`: roots, documents, size on disk, when last indexed and used."""
    from remembrancer.indexer.store.local.store import LocalStore

    size = 0
    for here, _, files in os.walk(index.dir):
        for f in files:
            try:
                size += os.lstat(os.path.join(here, f)).st_size
            except OSError:
                continue
    row: dict = {"name": index.name, "kind": index.kind,
                 "roots": [str(r) for r in index.roots] if index.roots is not None else None,
                 "index_dir": str(index.dir), "bytes": size, "documents": None, "sections": None,
                 "last_indexed_at": None, "last_used_at": None}
    if index.roots is not None:
        row["missing_roots"] = [str(r) for r in index.roots if not r.is_dir()]
        # a root is its resolved path: one that resolves elsewhere now is a link put in the folder's place
        row["relinked_roots"] = {str(r): real for r in index.roots if r.is_dir()
                                 for real in [os.path.realpath(r)] if real != os.path.abspath(r)}
    try:
        row["last_used_at"] = (index.dir / RECORD).stat().st_mtime
    except OSError:
        pass
    try:
        catalog = LocalStore(index.dir).open_ledger(readonly=True)
        try:
            counts = catalog.counts()
            row["documents"], row["sections"] = counts["documents"], counts["sections"]
            last = catalog.get_meta("last_indexed_at")
            row["last_indexed_at"] = float(last) if last else None
        finally:
            catalog.close()
    except Exception as e:  # a damaged index still gets its line, and can be forgotten
        row["problem"] = f"{type(e).__name__}: {e}"
    row["last_used_at"] = max((t for t in (row["last_used_at"], row["last_indexed_at"]) if t), default=None)
    return row


def find(what: str) -> Index:
    """The index `what` names: its folder name, its index folder, or one of its roots (a path)."""
    every = known()
    by_name = [i for i in every if i.name == what]
    if by_name:
        return by_name[0]
    p = Path(what).expanduser()
    if p.exists() or os.sep in what:
        try:
            real = p.resolve()
        except OSError:
            real = p.absolute()
        hit = [i for i in every if i.dir == real or (i.roots and real in i.roots)]
        if len(hit) == 1:
            return hit[0]
        if len(hit) > 1:
            raise UserError(f"{what} is a root of {len(hit)} corpora: {', '.join(i.name for i in hit)}",
                            param="corpus", options=[i.name for i in hit],
                            hint="name the one to forget: `remembrancer corpora forget NAME`")
    raise UserError(f"no indexed corpus is named {what!r} or has it as a root", param="corpus",
                    options=[i.name for i in every],
                    hint="`remembrancer corpora` lists them: give a NAME from it, or a root folder")


def remove(index: Index) -> None:
    """Delete the index folder (derived data only: the notes are never touched)."""
    base = indexes_dir().resolve()
    d = index.dir
    if d.is_symlink() or d.resolve().parent != base:   # never follow a link out of the data dir
        raise UserError(f"{d} is not an index folder of {base}", param="corpus")
    holder = writelock.writing(d / writelock.WRITER_LOCK)
    if holder is not None and holder.get("pid") != os.getpid():   # never delete under a live writer
        raise UserError(f"{index.name} is being written by {writelock.describe(holder)}", param="corpus",
                        hint="forget it when that run ends (a daemon serving it closes it itself)")
    shutil.rmtree(d)
