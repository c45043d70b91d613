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

# The runners-up a search answer carries whole, beside the best section: the agent reading it is a
# strong reader, and a right section second costs it a `read` call when only pointed to. Short ones
# only, up to a total (tokens as estimate_tokens counts them); the rest stay pointers with a snippet.
CARRY_SECTION_TOKENS = 400
CARRY_TOKENS = 800


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
    def judged(cls, counts: "IndexCounts | IndexStatus", verdict: Verdict, **facts) -> "Freshness":
        """A verdict on an index, with its counts (an IndexStatus, or a team store's IndexCounts)."""
        return cls(verdict, counts.documents, counts.sections, counts.generation, counts.last_indexed_at, **facts)

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
    content_lines: list[int] | None = None  # [first, last] of the section's lines a cut `content` carries
    # a conversation's exchange (indexer/search/conversations.py); None on notes
    corpus: str | None = None              # "notes" or "conversations", in an answer over both
    session_id: str | None = None
    uuid: str | None = None                # the line that opened the exchange (its prompt)
    timestamp: str | None = None
    branch: str | None = None
    agent_id: str | None = None            # a subagent's exchange
    commits: "list[VerifiedCommit] | None" = None   # an exchange's commits: quoted, or made while it ran
    commit: str | None = None              # a commit result (corpus "commits"): its full hash …
    author: str | None = None              # … and its author

    @classmethod
    def parse(cls, data) -> "Result":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        if known.get("scores") is not None:
            known["scores"] = Scores(**known["scores"])
        if known.get("commits") is not None:
            known["commits"] = [VerifiedCommit.parse(c) for c in known["commits"]]
        return cls(**known)

    def to_json(self) -> dict:
        out = _wire(self, keep=("heading", "date"))
        if self.scores is not None:
            out["scores"] = dataclasses.asdict(self.scores)
        if self.commits is not None:
            out["commits"] = [c.to_json() for c in self.commits]
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
    conversations_index: Freshness | None = None   # an answer over notes and conversations: the latter's
    commits_index: Freshness | None = None   # an answer over notes and commits: the latter's

    @classmethod
    def parse(cls, data) -> "SearchAnswer":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        for key in ("results", "best_weak"):
            if known.get(key) is not None:
                known[key] = [Result.parse(r) for r in known[key]]
        if known.get("emptied_by") is not None:
            known["emptied_by"] = [FilterCheck(**e) for e in known["emptied_by"]]
        for key in ("index", "conversations_index", "commits_index"):
            if key in known:
                known[key] = Freshness.parse(known[key])
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
        for key in ("conversations_index", "commits_index"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key).to_json()
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
    message: str | None = None             # why nothing is listed (filters that match no document)
    closest: list[str] | None = None       # an unmatched path prefix: the nearest top-level folders that exist
    index: Freshness | None = None         # the freshness verdict, added where the answer is sent

    @classmethod
    def parse(cls, data) -> "DocumentList":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        known["documents"] = [DocumentSummary(**d) for d in known["documents"]]
        known["index"] = Freshness.parse(known.get("index"))
        return cls(**known)

    def to_json(self) -> dict:
        out = _wire(self)
        out["documents"] = [d.to_json() for d in self.documents]
        if self.index is not None:
            out["index"] = self.index.to_json()
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
    index: Freshness | None = None         # the freshness verdict, added where the answer is sent

    @classmethod
    def parse(cls, data) -> "Page":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        known["index"] = Freshness.parse(known.get("index"))
        return cls(**known)

    def to_json(self) -> dict:
        out = _wire(self, keep=("type", "date"))
        if self.index is not None:
            out["index"] = self.index.to_json()
        return out


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
    index: Freshness | None = None         # the freshness verdict, added where the answer is sent

    @classmethod
    def parse(cls, data) -> "Outline":
        known = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        known["sections"] = [OutlineSection(**s) for s in known["sections"]]
        known["index"] = Freshness.parse(known.get("index"))
        return cls(**known)

    def to_json(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "index"}
        out["sections"] = [dataclasses.asdict(s) for s in self.sections]
        if self.index is not None:
            out["index"] = self.index.to_json()
        return out


# -- the memory tools' answers (indexer/memory/tools.py) ---------------------------------------------
# Built as the tools have always built them and redacted whole, then read into these records: the
# wire keeps its keys, their order and what is left out when empty (tests/search/test_answer_records.py).

def _records_json(value):
    if dataclasses.is_dataclass(value):
        return value.to_json()
    if isinstance(value, list):
        return [_records_json(v) for v in value]
    return value


class _Wire:
    """JSON in and out for a record whose fields are JSON values or records (named in NESTED)."""

    NESTED: dict = {}
    KEEP: tuple = ()   # fields sent even when None

    @classmethod
    def parse(cls, data):
        known = {}
        for f in dataclasses.fields(cls):
            if f.name not in data:
                continue
            v, nested = data[f.name], cls.NESTED.get(f.name)
            if nested is not None and v is not None:
                v = [nested.parse(x) for x in v] if isinstance(v, list) else nested.parse(v)
            known[f.name] = v
        return cls(**known)

    def to_json(self) -> dict:
        return {k: _records_json(v) for k, v in _wire(self, keep=self.KEEP).items()}


@dataclass
class CommitRef(_Wire):
    """The commit on the default branch a cited one was probably amended or rebased into."""
    commit: str
    subject: str
    date: str | None = None
    KEEP = ("date",)


@dataclass
class CommitCheck(_Wire):
    """One cited commit, checked against git (indexer/memory/commits.py)."""
    sha: str | None = None
    cited_as: str | None = None
    lines: list[int] | None = None
    verdict: str | None = None
    exists: bool | None = None        # None: cannot be checked
    landed: bool | None = None        # None: unknown
    repo: str | None = None
    object: str | None = None         # what a SHA that is not a commit names (a tree, a blob)
    commit: str | None = None
    default_branch: str | None = None
    date: str | None = None
    subject: str | None = None
    files: list[str] | None = None
    files_total: int | None = None
    branches: list[str] | None = None
    replaced_by: CommitRef | None = None
    checked: list[str] | None = None
    reason: str | None = None
    also_in: list[str] | None = None
    heading: str | None = None        # verify: the section that cites it
    NESTED = {"replaced_by": CommitRef}
    KEEP = ("exists", "landed")


@dataclass
class VerifiedCommit(_Wire):
    """A cited commit that exists, on a history or search row: whether it landed."""
    sha: str
    cited_as: str
    repo: str | None = None
    commit: str | None = None
    landed: bool | None = None
    default_branch: str | None = None
    date: str | None = None
    subject: str | None = None
    KEEP = ("landed", "default_branch", "date")


@dataclass
class UnverifiedCommit(_Wire):
    """A cited commit that could not be found (absent, not a commit, or unknown), and why."""
    sha: str
    cited_as: str
    verdict: str | None = None
    reason: str | None = None


@dataclass
class MemoryRow(_Wire):
    """A section in a memory tool's answer: where, when, and what the tool says about it."""
    path: str
    heading: str
    lines: list[int]
    type: str | None = None
    date: str | None = None
    tokens: int | None = None
    stale: bool | None = None                 # True when marked stale or superseded
    dated_by: str | None = None               # history: where its date came from
    record: bool | None = None                # history: the entity's own record
    similarity: float | None = None           # neighbors: similar sections
    closest_to: str | None = None
    snippet: str | None = None
    score: float | None = None                # history with a topic
    provenance: str | None = None
    matched_terms: list[str] | None = None    # latest, relaxed
    missing_terms: list[str] | None = None
    verified_commits: list[VerifiedCommit] | None = None
    unverified_commits: list[UnverifiedCommit] | None = None
    NESTED = {"verified_commits": VerifiedCommit, "unverified_commits": UnverifiedCommit}
    KEEP = ("date",)


@dataclass
class HistoryEntity(_Wire):
    name: str
    records: list[str]
    aliases: list[str]
    matched_by: str


@dataclass
class HistoryAnswer(_Wire):
    """What `history` answers: everything the memory says about one entity, newest first."""
    entity: HistoryEntity
    order: str
    results: list[MemoryRow]
    total: int
    truncated: bool
    topic: str | None = None
    since: str | None = None
    until: str | None = None
    message: str | None = None
    notes: list[str] | None = None
    index: Freshness | None = None            # the freshness verdict, added where the answer is sent
    NESTED = {"entity": HistoryEntity, "results": MemoryRow, "index": Freshness}

    def to_json(self) -> dict:
        out = super().to_json()
        if self.since or self.until:   # a window is said whole: both ends, an open one as null
            tail = ("message", "notes", "index")
            out = {**{k: v for k, v in out.items() if k not in ("since", "until", *tail)},
                   "since": self.since, "until": self.until, **{k: out[k] for k in tail if k in out}}
        return out


@dataclass
class LatestAnswer(_Wire):
    """What `latest` answers: the sections holding all the terms, newest first (a filter)."""
    terms: list[str]
    order: str
    results: list[MemoryRow]
    total: int
    truncated: bool
    relaxed: bool
    filters: str | None = None
    not_in_corpus: list[str] | None = None
    only_outside_filters: list[str] | None = None
    dropped_terms: list[str] | None = None
    message: str | None = None
    index: Freshness | None = None
    NESTED = {"results": MemoryRow, "index": Freshness}


@dataclass
class OutboundLink(_Wire):
    """A link out of the document: resolved (`path`), or not (`suggestions`)."""
    target: str
    anchor: str | None
    kind: str
    line: int
    text: str
    from_heading: str
    path: str | None = None
    anchor_found: bool | None = None
    suggestions: list[str] | None = None
    KEEP = ("anchor",)


@dataclass
class InboundLink(_Wire):
    """A backlink: where another document links here."""
    source: str
    line: int
    kind: str
    anchor: str | None
    text: str
    heading: str
    type: str | None
    date: str | None
    KEEP = ("anchor", "type", "date")


@dataclass
class LinkCounts(_Wire):
    outbound: int
    inbound: int
    unresolved: int


@dataclass
class NeighborsAnswer(_Wire):
    """What `neighbors` answers: a document's links both ways, its broken ones, and the sections
    closest in meaning that nobody linked."""
    path: str
    title: str | None
    type: str | None
    outbound: list[OutboundLink]
    inbound: list[InboundLink]
    unresolved: list[OutboundLink]
    similar: list[MemoryRow]
    counts: LinkCounts
    notes: list[str] | None = None
    index: Freshness | None = None
    NESTED = {"outbound": OutboundLink, "inbound": InboundLink, "unresolved": OutboundLink, "similar": MemoryRow,
              "counts": LinkCounts, "index": Freshness}
    KEEP = ("title", "type")


@dataclass
class VerifySource(_Wire):
    path: str | None = None
    heading: str | None = None
    text_chars: int | None = None


@dataclass
class RepoState(_Wire):
    repo: str
    path: str
    readable: bool
    reason: str | None = None


@dataclass
class VerifyAnswer(_Wire):
    """What `verify` answers: the commits a document, a section or a text cites, each checked."""
    source: VerifySource
    repos: list[RepoState]
    commits: list[CommitCheck]
    summary: dict[str, int]                  # verdict → how many
    message: str | None = None
    index: Freshness | None = None
    NESTED = {"source": VerifySource, "repos": RepoState, "commits": CommitCheck, "index": Freshness}


# -- status ----------------------------------------------------------------------------------------

@dataclass
class IndexCounts:
    """What a freshness verdict repeats of the index it judges."""
    documents: int
    sections: int
    generation: int
    last_indexed_at: float | None


@dataclass
class RootHeads(_Wire):
    """A corpus root, and the HEAD it was indexed at against the one it is at now (None: not git)."""
    name: str
    path: str
    head_indexed: str | None = None
    head_current: str | None = None
    unavailable: str | None = None   # why its folder cannot be read now (moved, deleted, no permission)
    KEEP = ("head_indexed", "head_current")


@dataclass
class IndexStatus(_Wire):
    """One index as a request's scope sees it: where it lives, its counts and generations, the
    model it was embedded with, when it was last indexed and what the runs warned about."""
    index_dir: str
    store: dict                            # the store's own description (kind, and where it is)
    roots: list[RootHeads]
    documents: int
    sections: int
    chunks: int
    passages: int
    vectors: int
    generation: int
    fulltext_generation: int
    vectors_generation: int | None
    model: dict | None                     # the model contract the index was embedded with
    last_indexed_at: float | None
    warnings: list[str]
    redaction: dict                        # the policy in force, or why it fails closed
    scope: list[str] | None = None
    vectors_waiting: int | None = None     # passage texts without a vector yet (keyword-only until embedded)
    NESTED = {"roots": RootHeads}
    KEEP = ("vectors_generation", "model", "last_indexed_at")

    def unavailable_roots(self) -> str | None:
        """Why some root cannot be read now (its documents are kept as last indexed), or None: an
        index over a folder that was moved or deleted is never fresh."""
        gone = [r for r in self.roots if r.unavailable]
        if not gone:
            return None
        return "; ".join(f"root {r.name} ({r.path}) {r.unavailable}" for r in gone) + \
            ": its documents are kept as last indexed and answers may be out of date"


@dataclass
class DaemonState(_Wire):
    """The daemon that answered: its process, its clients, and the addressed corpus's writer."""
    pid: int
    socket: str
    started_at: float
    clients: int
    requests: int
    idle_exit_s: float | None
    corpus_idle_s: float | None
    model_loads: int
    notifications: int
    last_notification: dict | None
    multi_corpus: bool
    default_roots: list[str]
    queued_changes: int
    seconds_behind: float | None
    ingesting: bool
    last_error: str | None
    last_ingest: dict | None               # the last run's report, as the scope sees it
    polled: dict | None = None             # roots inotify's limit leaves polled (daemon/watch.py problem())
    build: dict | None = None              # its version and code fingerprint (remembrancer/build.py); None: an older daemon
    supervisor: str | None = None          # the service manager running it ("systemd", "launchd"), else None

    def to_json(self) -> dict:
        out = dataclasses.asdict(self)
        for key in ("polled", "build", "supervisor"):   # sent only when there are some (an older daemon: no build)
            if out[key] is None:
                del out[key]
        return out


@dataclass
class CorpusLine(_Wire):
    """One corpus a daemon serves, open or released."""
    roots: list[str]
    index_dir: str
    state: str
    idle_s: float | None = None
    freshness: Freshness | None = None
    closed_at: float | None = None
    detail: str | None = None
    warnings: list[str] | None = None   # its index runs' warnings (a file left out, a transcript's bad line)
    polled: dict | None = None          # roots inotify's limit leaves polled (daemon/watch.py problem())
    NESTED = {"freshness": Freshness}


@dataclass
class StatusAnswer:
    """What `status` answers: the index (when one is addressed), the daemon (None: answered in
    process), the verdict, and the corpora a daemon serves. On the wire the index's fields come
    first, flat."""
    index: IndexStatus | None
    daemon: DaemonState | None
    freshness: Freshness | None = None
    corpora: list[CorpusLine] | None = None

    @classmethod
    def parse(cls, data) -> "StatusAnswer":
        return cls(index=IndexStatus.parse(data) if "index_dir" in data else None,
                   daemon=DaemonState.parse(data["daemon"]) if data.get("daemon") else None,
                   freshness=Freshness.parse(data.get("freshness")),
                   corpora=[CorpusLine.parse(c) for c in data["corpora"]] if "corpora" in data else None)

    def to_json(self) -> dict:
        out = self.index.to_json() if self.index is not None else {"roots": []}
        out["daemon"] = self.daemon.to_json() if self.daemon is not None else None
        if self.freshness is not None:
            out["freshness"] = self.freshness.to_json()
        if self.corpora is not None:
            out["corpora"] = [c.to_json() for c in self.corpora]
        return out
