"""Typed records for what crosses the answer seam: the engine builds them, the socket, the MCP
structuredContent and `--json` carry their JSON, and the renderer reads them back.

Why records and not dicts: every reader of an answer (renderer, CLI, query log, eval) used to pick
keys out by name; a record names them once and its JSON is the wire format — the same keys in the
same order as before. Plain dataclasses, not pydantic: the CLI renders these as a socket client,
and its start-up imports nothing heavy (tests/test_daemon.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["fresh", "catching_up", "stale"]


def _wire(record, keep=()) -> dict:
    """A record's JSON: its fields in declaration order, None left out unless named in `keep`."""
    return {f.name: v for f in dataclasses.fields(record)
            if (v := getattr(record, f.name)) is not None or f.name in keep}


@dataclass
class Freshness:
    """How far the index that answered is behind the files: every answer about content carries one.

    The verdict is judged where the facts are (a daemon knows its queue, the read-only fallback
    knows it is read-only, a team reader compares commits); the record, its JSON and its wording
    are built here, once."""

    verdict: Verdict | None = None                # None: an answer from something that did not judge
    documents: int | None = None
    sections: int | None = None
    generation: int | None = None
    last_indexed_at: float | None = None
    store: str | None = None                      # a team store: its URL without the password
    indexed_heads: dict[str, str] | None = None   # a team store: the commit each root was indexed at
    detail: str | None = None
    writer_running: bool | None = None            # a team store: is anyone updating it
    reason: str | None = None
    queued_changes: int | None = None
    seconds_behind: float | None = None

    @classmethod
    def judged(cls, counts, verdict: Verdict, **facts) -> "Freshness":
        """A verdict on an index whose `counts` are an engine status (or a store's counts)."""
        return cls(verdict, counts["documents"], counts["sections"], counts["generation"],
                   counts["last_indexed_at"], **facts)

    @classmethod
    def parse(cls, data) -> "Freshness | None":
        """The record from its JSON (None when an answer carried none)."""
        if not data:
            return None
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})

    def to_json(self) -> dict:
        """The wire form: counts first (an unindexed store's null time included), then a team
        store's facts, then the verdict and what it rests on."""
        counted = self.documents is not None
        fields = _wire(self, keep=("last_indexed_at",) if counted else ())
        counts = ("documents", "sections", "generation", "last_indexed_at")
        store = ("store", "indexed_heads", "detail", "writer_running") if self.writer_running is not None \
            else ("store", "indexed_heads")
        order = [*counts, *store, "verdict", "reason", "detail", "queued_changes", "seconds_behind"]
        return {k: fields[k] for k in dict.fromkeys(order) if k in fields}

    def line(self) -> str:
        """One line: fresh / catching up: N changes queued, S s behind / STALE: reason."""
        size = ""
        if self.documents is not None:
            size = f" ({self.documents} documents, {'?' if self.sections is None else self.sections} sections)"
        if self.verdict == "fresh":
            return f"Index fresh{size}" + (f": {self.detail}." if self.detail else ".")
        if self.verdict == "catching_up":
            if self.queued_changes:
                what = f"{self.queued_changes} changes queued, {self.seconds_behind or 0:g} s behind"
            else:
                what = self.reason or "updating"
            return f"Index catching up: {what}{size} — the newest edits may be missing."
        if self.verdict == "stale":
            return f"Index STALE: {self.reason or 'unknown reason'}{size} — recent changes may be missing."
        return "Index freshness unknown."


def freshness_line(fresh: Freshness | None) -> str:
    """The header of every rendered answer; an answer without a verdict says so."""
    return (fresh or Freshness()).line()


@dataclass
class Scores:
    """A hybrid result's evidence per leg."""

    bm25: float
    dense: float
    literal: float


@dataclass
class FilterCheck:
    """One filter of a search that matched nothing, tried alone and left out (store/filters.py)."""

    param: str
    filter: str
    matches_without_it: int | None
    matches_alone: int


@dataclass
class Result:
    """One section a search returns: a pointer (where, what, how it ranked) and, for the best one
    and short runners-up, its text (`content`; the best one's cut to the budget when
    `content_truncated`)."""

    path: str
    heading: str | None = None             # None: the document's preamble
    lines: list[int] | None = None         # [first, last], 1-based inclusive
    score: float | None = None
    type: str | None = None
    date: str | None = None
    snippet: str | None = None
    provenance: str | None = None          # keyword / semantic / both / filter …
    tokens: int | None = None
    stale: bool | None = None              # marked stale or superseded
    also: list[str] | None = None          # other matching headings of the same document
    scores: Scores | None = None
    why: list[str] | None = None           # explain: why it ranked there
    content: str | None = None
    content_truncated: bool | None = None
    content_total_chars: int | None = None

    @classmethod
    def parse(cls, data) -> "Result":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        if known.get("scores") is not None:
            known["scores"] = Scores(**known["scores"])
        return cls(**known)

    def to_json(self) -> dict:
        out = _wire(self, keep=("heading", "date"))
        if self.scores is not None:
            out["scores"] = dataclasses.asdict(self.scores)
        return out


@dataclass
class SearchAnswer:
    """What `search` answers: the results (or, when it abstains, the weak candidates and why),
    what the filters did, and how fresh the index was."""

    query: str = ""
    mode: str | None = None                # hybrid / exact / filters
    results: list[Result] = dataclasses.field(default_factory=list)
    no_strong_match: bool = False
    took_ms: float | None = None
    best_weak: list[Result] | None = None
    why_no_strong_match: list[str] | None = None
    message: str | None = None             # why nothing came back
    emptied_by: list[FilterCheck] | None = None   # each filter of an empty filtered search, checked
    truncated: bool | None = None          # a filters-only listing left sections out
    found_by: str | None = None            # the phrasing that found the best result
    notes: list[str] | None = None
    left_out: list[str] | None = None      # what the token budget cut
    index: Freshness | None = None

    @classmethod
    def parse(cls, data) -> "SearchAnswer":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        for key in ("results", "best_weak"):
            if known.get(key) is not None:
                known[key] = [Result.parse(r) for r in known[key]]
        if known.get("emptied_by") is not None:
            known["emptied_by"] = [FilterCheck(**e) for e in known["emptied_by"]]
        if "index" in known:
            known["index"] = Freshness.parse(known["index"])
        return cls(**known)

    def to_json(self) -> dict:
        out = _wire(self)
        for key in ("results", "best_weak"):
            if key in out:
                out[key] = [r.to_json() for r in out[key]]
        if "emptied_by" in out:
            out["emptied_by"] = [dataclasses.asdict(e) for e in out["emptied_by"]]
        if self.index is not None:
            out["index"] = self.index.to_json()
        return out

    @property
    def shown(self) -> list[Result]:
        """The results a reader sees: the weak candidates when the search abstained."""
        return (self.best_weak or []) if self.no_strong_match else self.results


@dataclass
class DocumentSummary:
    """One document of a listing."""

    path: str
    type: str
    date: str | None
    title: str | None
    sections: int
    tokens: int
    tags: list[str]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class DocumentList:
    """What `list` answers: one page of documents, the total, and where the next page starts."""

    documents: list[DocumentSummary]
    total: int
    offset: int | None = None              # said when the page does not start at the first
    truncated: bool | None = None
    next_offset: int | None = None

    @classmethod
    def parse(cls, data) -> "DocumentList":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        known["documents"] = [DocumentSummary(**d) for d in known["documents"]]
        return cls(**known)

    def to_json(self) -> dict:
        out = _wire(self)
        out["documents"] = [d.to_json() for d in self.documents]
        return out


@dataclass
class Page:
    """What `read` answers: a section, a line range or the whole document — one page of it, and
    where the next page starts."""

    path: str
    type: str | None
    date: str | None
    heading: str | None = None             # read by heading ("" is the preamble); None otherwise
    lines: list[int] | None = None         # [first, last] of a section or a range
    content: str = ""
    total_chars: int = 0
    returned_chars: int = 0
    offset: int = 0
    truncated: bool = False
    next_offset: int | None = None

    @classmethod
    def parse(cls, data) -> "Page":
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})

    def to_json(self) -> dict:
        return _wire(self, keep=("type", "date"))


@dataclass
class OutlineSection:
    heading: str
    level: int
    lines: list[int]
    tokens: int


@dataclass
class Outline:
    """What `read` with `outline` (and `outline`) answers: a document's sections, with their sizes."""

    path: str
    type: str | None
    date: str | None
    title: str | None
    sections: list[OutlineSection]
    total_tokens: int

    @classmethod
    def parse(cls, data) -> "Outline":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        known["sections"] = [OutlineSection(**s) for s in known["sections"]]
        return cls(**known)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)
