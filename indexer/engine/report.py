"""What an index run did (IndexReport), and the warnings it leaves stored beside the index.

A run's warnings are kept with the path each one is about, so a request limited to a scope
sees only the warnings about its own files (indexer/store/scope.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from remembrancer.indexer.ingest import corpus
from remembrancer.indexer.store import scope
from remembrancer.indexer.store.base import Ledger

KEPT_WARNINGS = 200   # the newest warnings a run leaves stored
# The catalog's note of a whole pass under way, cleared when it ends: still there when no pass runs, the
# last one was killed, crashed or stopped half-way (Writer.refresh, Writer.behind).
UNFINISHED_PASS = "pass_unfinished"


@dataclass
class IndexReport:
    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0    # walked but not indexable as they are now (binary, unreadable, secret: true)
    embedded: int = 0
    waiting: int = 0    # passages left without a vector (the model or its server unavailable): keyword-only until filled
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    # Per path, for a scoped view of the run (`scoped`): what was walked, what happened to the
    # changed files, the new texts each one needed embedded, the path each warning is about.
    walked: list[str] = field(default_factory=list, repr=False)
    outcomes: dict[str, str] = field(default_factory=dict, repr=False)
    embedded_for: dict[str, set] = field(default_factory=dict, repr=False)
    warning_paths: list[str | None] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        """The run's figures; `waiting` only when some wait (a scoped view never shows it: the count is
        the whole index's, and a scope's own is in its `status`)."""
        return {k: v for k, v in self.__dict__.items() if k not in _PER_PATH and (k != "waiting" or v)}

    def scoped(self, wall: scope.Wall) -> dict:
        """The run as a corpus holding only the scope's files would have reported it."""
        if not wall.prefixes:
            return self.to_dict()
        counts = {k: 0 for k in ("added", "updated", "removed", "skipped")}
        unchanged = 0
        walked = [p for p in self.walked if wall.sees(p)]
        for p in walked:
            o = self.outcomes.get(p, "unchanged")
            if o in counts:
                counts[o] += 1
            elif o == "unchanged":
                unchanged += 1
        counts["removed"] = sum(1 for p, o in self.outcomes.items() if o == "removed" and wall.sees(p))
        shas = set().union(*(s for p, s in self.embedded_for.items() if wall.sees(p)))
        return {"scanned": len(walked), **counts, "unchanged": unchanged, "embedded": len(shas),
                "seconds": self.seconds, "warnings": scope.visible_warnings(wall, self.warnings, self.warning_paths)}


_PER_PATH = ("walked", "outcomes", "embedded_for", "warning_paths")


@dataclass
class Behind:
    """How far the index is behind its files, judged without writing anything (Writer.behind): what
    an index pass would do now. An in-process answer that did not refresh first is judged on it —
    a pass that never finished, or a file never read, is never "fresh"."""

    files: int = 0           # the files (commits, transcripts) a pass would index
    new: int = 0             # of them, not in the index
    changed: int = 0         # in the index with other content
    gone: int = 0            # in the index, no longer among the files
    unfinished: bool = False   # the last whole pass started and did not finish (killed, crashed, stopped)
    never: bool = False      # no pass has ever finished
    reread: bool = False     # the parser, layout or redaction policy changed: every document is read again
    moved: list[str] = field(default_factory=list)   # roots whose HEAD is not the one indexed

    def reason(self, index_command: str) -> str | None:
        """Why the index is stale, with the command that brings it up to date; None: it is not."""
        if self.unfinished or self.never:
            which = "first" if self.never else "last"
            done = self.files - self.new - self.changed
            return (f"the {which} indexing pass did not finish: {done} of {self.files} files indexed; "
                    f"run `{index_command}` to finish it")
        differ = self.new + self.changed + self.gone
        if differ:
            parts = ", ".join(f"{n} {what}" for n, what in ((self.new, "new"), (self.changed, "changed"),
                                                             (self.gone, "removed")) if n)
            return (f"{differ} {'file differs' if differ == 1 else 'files differ'} from the index ({parts}); "
                    f"run `{index_command}` to read them")
        if self.reread:
            return ("the parser, layout or redaction policy changed since the index was built: every document "
                    f"is read again; run `{index_command}`")
        if self.moved:
            return f"HEAD of {self.moved[0]} moved since the last index; run `{index_command}`"
        return None


class StoredWarnings:
    """The last runs' warnings as the catalog keeps them, each with the corpus path it is about."""

    def __init__(self, roots):
        self.roots = roots

    def read(self, catalog: Ledger) -> list[tuple[str, str | None]]:
        warnings = json.loads(catalog.get_meta("last_warnings") or "[]")
        paths = json.loads(catalog.get_meta("last_warning_paths") or "null")
        if not isinstance(paths, list) or len(paths) != len(warnings):   # an index from before the paths
            paths = [self.path_of(w) for w in warnings]
        return list(zip(warnings, paths))

    def write(self, catalog: Ledger, warnings: list[str], paths: list[str | None]) -> None:
        catalog.set_meta("last_warnings", json.dumps(warnings[-KEPT_WARNINGS:]))
        catalog.set_meta("last_warning_paths", json.dumps(paths[-KEPT_WARNINGS:]))

    def visible(self, catalog: Ledger, wall: scope.Wall, path: str | None = None) -> list[str]:
        """The stored warnings a scope may see; with `path`, only those about that file."""
        pairs = [(w, p) for w, p in self.read(catalog) if path is None or p == path]
        return scope.visible_warnings(wall, [w for w, _ in pairs], [p for _, p in pairs])

    def path_of(self, warning: str) -> str | None:
        """The corpus path a warning is about, or None for a run-wide one (a scope keeps those)."""
        head = warning.partition(": ")[0]
        if head == warning:
            return None
        if head.lower().endswith(corpus.MARKDOWN_SUFFIXES) or scope.warning_path(warning):
            return head
        return head if any(p.exists() for p in self._disk_paths(head)) else None

    def _disk_paths(self, path: str) -> list[Path]:
        if len(self.roots) == 1:
            return [self.roots[0].path / path]
        name, _, rel = path.partition("/")
        return [r.path / rel for r in self.roots if r.name == name]
