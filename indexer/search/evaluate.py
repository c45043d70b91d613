"""Score retrieval on a labelled query set, through the same search path the MCP tool uses.

Judging follows ../shared/eval/README.md: a result is a *strict* hit when its path equals the
label's and its breadcrumb equals the label's (case-insensitive, a split suffix " (Part 2)"
ignored); `heading: null` accepts any section of the file, `""` is the preamble. *Lenient* also
accepts a descendant section. The judging and aggregation functions are pure so they can be
tested without an index; `EvalSession` (behind `run_eval`) is the only part that opens an engine.

*Answer in context*: the agent reads the response, not the ranked list. Given a `ResponseMeter`
(the client's rendering of the wire answer and a token count), each answerable question also
records whether the rendered response holds the whole text of a section labelled 2 or 3 (the
labels T1≥2 reads), and every question the response's size in tokens.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from remembrancer.indexer.errors import UserError
from remembrancer.indexer.search.answer import section_key

SEP = " > "
TOP_KS = (1, 3, 5)
RECALL_K = 5
# Shorter queries ("CAP theorem", an identifier) appear verbatim in their answer by design;
# the guard is after copied sentences, which inflate scores without testing retrieval.
SELF_QUOTE_MIN_WORDS = 4
MISS_SHOWN = 3


# -- cases ---------------------------------------------------------------------------------------

@dataclass
class Label:
    path: str
    heading: str | None  # None = any section of the file; "" = the preamble
    grade: int = 3

    def show(self) -> str:
        return self.path if self.heading is None else f"{self.path}#{self.heading}"


@dataclass
class Case:
    id: str
    query: str
    stratum: str = "default"
    answerable: bool = True
    expect: list[Label] = field(default_factory=list)
    corpus: str | None = None


def load_cases(path: str | Path) -> list[Case]:
    """Read a JSONL query file or a YAML case file; any defect is a UserError naming the line."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"query file not found: {path}", param="queries",
                        hint="pass a .jsonl query file (see ../shared/eval/README.md) or a .yaml case file")
    if not p.is_file():
        raise UserError(f"query file is not a file: {path}", param="queries")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read query file {path}: {e}", param="queries") from None
    cases = _load_yaml(text, p) if p.suffix.lower() in (".yaml", ".yml") else _load_jsonl(text, p)
    if not cases:
        raise UserError(f"{path}: no queries in the file", param="queries",
                        hint="one JSON object a line, each with a \"query\"")
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise UserError(f"{path}: duplicate id {c.id!r}", param="queries", hint="give every row its own id")
        seen.add(c.id)
    return cases


def _load_jsonl(text: str, p: Path) -> list[Case]:
    cases = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{p}:{n}: invalid JSON ({e.msg}, column {e.colno})", param="queries",
                            hint="one JSON object a line") from None
        cases.append(_case(row, f"{p}:{n}", default_id=f"{p.stem}:{n}"))
    return cases


def _load_yaml(text: str, p: Path) -> list[Case]:
    """`cases: [{q: ..., expect: [{path: ..., heading: ...}]}]` — a corpus's own regression set."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise UserError(f"{where}: invalid YAML ({getattr(e, 'problem', None) or e})", param="queries") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise UserError(f"{p}: expected a mapping with a list under 'cases'", param="queries",
                        hint="cases: [{q: question, expect: [{path: file.md, heading: A > B}]}]")
    corpus = doc.get("corpus")
    cases = []
    for i, item in enumerate(doc["cases"], 1):
        if isinstance(item, dict) and "q" in item and "query" not in item:
            item = {**item, "query": item["q"]}
        if isinstance(item, dict) and corpus and "corpus" not in item:
            item = {**item, "corpus": corpus}
        cases.append(_case(item, f"{p}: case {i}", default_id=f"{p.stem}:{i}"))
    return cases


def _case(row: object, where: str, default_id: str) -> Case:
    if not isinstance(row, dict):
        raise UserError(f"{where}: expected an object, got {type(row).__name__}", param="queries")
    query = row.get("query")
    if not isinstance(query, str) or not query.strip():
        raise UserError(f"{where}: row has no query", param="queries", hint="every row needs a non-empty \"query\"")
    expect = row.get("expect", [])
    if not isinstance(expect, list):
        raise UserError(f"{where}: \"expect\" must be a list of labels", param="queries")
    labels = []
    for e in expect:
        if not isinstance(e, dict) or not isinstance(e.get("path"), str) or not e["path"]:
            raise UserError(f"{where}: each label needs a \"path\"", param="queries")
        heading = e.get("heading")
        grade = e.get("grade", 3)
        if (heading is not None and not isinstance(heading, str)) or not isinstance(grade, int):
            raise UserError(f"{where}: label heading must be a string or null and grade an integer",
                            param="queries")
        labels.append(Label(e["path"], heading, grade))
    answerable = row.get("answerable", True) is not False
    if answerable and not labels:
        raise UserError(f"{where}: answerable row has no labels", param="queries",
                        hint="add \"expect\" labels or set \"answerable\": false")
    corpus = row.get("corpus")
    return Case(id=str(row.get("id") or default_id), query=query.strip(),
                stratum=str(row.get("stratum") or "default"), answerable=answerable,
                expect=labels, corpus=corpus if isinstance(corpus, str) else None)


def corpus_dir(cases: list[Case], queries_path: str | Path) -> Path | None:
    """The corpus the rows name, relative to the eval folder (…/eval/queries/x.jsonl → …/eval/<corpus>)."""
    names = {c.corpus for c in cases if c.corpus}
    if not names:
        return None
    if len(names) > 1:
        raise UserError(f"{queries_path}: rows name several corpora ({', '.join(sorted(names))})",
                        param="queries", hint="split the file per corpus, or pass --root to choose one")
    name = names.pop()
    qfile = Path(queries_path).resolve()
    # A YAML set lives with its corpus (its own folder first); JSONL sets live in …/eval/queries/.
    bases = (qfile.parent, qfile.parent.parent) if qfile.suffix.lower() in (".yaml", ".yml") \
        else (qfile.parent.parent, qfile.parent)
    for base in bases:
        if (base / name).is_dir():
            return base / name
    raise UserError(f"corpus {name!r} named in {queries_path} not found next to it", param="queries",
                    hint="pass the corpus folder with --root")


# -- judging (pure) ------------------------------------------------------------------------------

def heading_key(heading: str | None) -> str:
    """The comparable form of a breadcrumb: split suffix dropped, whitespace collapsed, casefolded
    (the same form search uses to show each section once)."""
    return section_key(heading)


def is_hit(result: dict, label: Label, lenient: bool = False) -> bool:
    """Does this search result answer this label (strict, or lenient = a descendant section too)?"""
    if result.get("path") != label.path:
        return False
    if label.heading is None:
        return True
    got, want = heading_key(result.get("heading")), heading_key(label.heading)
    if got == want:
        return True
    return lenient and want != "" and got.startswith(want + SEP)


def primary_labels(expect: list[Label]) -> list[Label]:
    """The labels Top-k and MRR score: grade 3, or the row's best grade when none is 3 (qmd is all grade 1)."""
    if not expect:
        return []
    top = 3 if any(e.grade >= 3 for e in expect) else max(e.grade for e in expect)
    return [e for e in expect if e.grade >= top]


def recall_labels(expect: list[Label]) -> list[Label]:
    """Labels Recall@5 counts: grade >= 2 (the primary ones when a row has none), duplicates merged."""
    chosen = [e for e in expect if e.grade >= 2] or primary_labels(expect)
    unique: dict[tuple[str, str | None], Label] = {}
    for e in chosen:
        unique.setdefault((e.path, None if e.heading is None else heading_key(e.heading)), e)
    return list(unique.values())


def first_rank(results: list[dict], labels: list[Label], lenient: bool = False) -> int | None:
    """1-based rank of the first result that hits any label, or None."""
    for i, r in enumerate(results, 1):
        if any(is_hit(r, lab, lenient) for lab in labels):
            return i
    return None


def judge(case: Case, results: list[dict]) -> dict:
    """One answerable case against its ranked list: first strict/lenient rank, the first rank of any
    label graded "equally correct" or better (rank_any), and Recall@5."""
    prim = primary_labels(case.expect)
    rel = recall_labels(case.expect)
    top = results[:RECALL_K]
    found = sum(1 for lab in rel if any(is_hit(r, lab) for r in top))
    return {"rank": first_rank(results, prim), "rank_lenient": first_rank(results, prim, lenient=True),
            "rank_any": first_rank(results, rel), "recall": found / len(rel) if rel else 0.0}


def aggregate(judged: list[dict]) -> dict:
    """Top-k, MRR (strict and lenient) and mean Recall@5 over judged cases; fractions in [0, 1].
    `top1_any`: the first result is a label graded 2 or 3 — a right answer, if not the one the labeller
    preferred (where two dev sets prefer opposite kinds of note for the same question, the gap between
    it and top1 is that preference, not a wrong answer)."""
    n = len(judged)
    out: dict = {"n": n}
    for kind, key in (("", "rank"), ("_lenient", "rank_lenient")):
        ranks = [j[key] for j in judged]
        for k in TOP_KS:
            out[f"top{k}{kind}"] = _mean([1.0 if r is not None and r <= k else 0.0 for r in ranks])
        out[f"mrr{kind}"] = _mean([1.0 / r if r else 0.0 for r in ranks])
    out["top1_any"] = _mean([1.0 if j.get("rank_any") == 1 else 0.0 for j in judged])
    out["recall5"] = _mean([j["recall"] for j in judged])
    return out


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: with few queries, an observed latency beats an interpolated one."""
    if not values:
        return 0.0
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def quotes_query(query: str, text: str) -> bool:
    """Does the text contain the query verbatim (case-insensitive, whitespace-normalised)?"""
    q = _flat(query).rstrip("?!. ")
    return len(q.split()) >= SELF_QUOTE_MIN_WORDS and q in _flat(text)


def show(result: dict) -> str:
    return f"{result.get('path')}#{result.get('heading') or ''}"


@dataclass(frozen=True)
class ResponseMeter:
    """What the agent receives for a search: `render` turns the wire answer into the text the client
    hands the model, `count_tokens` measures that text. Given by the caller: the renderer lives with
    the MCP server, the tokenizer with the model."""

    render: Callable[[dict], str]
    count_tokens: Callable[[str], int]


def spaced(text: str) -> str:
    """Whitespace runs made one space: a section's text compares equal however the response wraps it."""
    return re.sub(r"\s+", " ", text).strip()


def in_context(response: str, section_texts: list[str]) -> bool:
    """Does the response hold the whole text of any of these sections (whitespace-normalised)?
    An empty section proves nothing and never counts."""
    flat = spaced(response)
    return any(t and t in flat for t in map(spaced, section_texts))


# -- running -------------------------------------------------------------------------------------

def _tty_progress():
    """A one-line counter on stderr, only for a person watching (never in logs or pipes)."""
    if not sys.stderr.isatty():
        return None

    def update(done: int, total: int, path: str) -> None:
        end = "\n" if done >= total else ""
        getattr(sys.stderr, "unfiltered", sys.stderr).write("\r")   # the CLI shows a bare CR in its text as \x0d
        print(f"indexing {done}/{total} {path[-50:]:<50}", end=end, file=sys.stderr, flush=True)

    return update


def run_eval(queries_path: str, root_args: list[str] | None, limit: int = 5,
             alternates: dict[str, list[str]] | None = None, *, store=None, embedder=None,
             corpus: str = "notes") -> dict:
    """Refresh the index, run every query through `search`, and return a JSON-serialisable report.
    `alternates` maps a case id to rephrasings passed as the search tool's `alternates`; `store`
    (indexer/store/base.py, bench/bench_team.py) and `embedder` pass through to the engine;
    `corpus` "commits": the commits of the roots' repositories are the corpus scored; "code": the
    roots are source folders, read as a code corpus."""
    with EvalSession(queries_path, root_args, store=store, embedder=embedder, corpus=corpus) as session:
        return session.score(limit, alternates)


class EvalSession:
    """An open, refreshed index for one query set, scored as many times as asked (the bench varies
    the ranking between runs without building the index again)."""

    def __init__(self, queries_path: str, root_args: list[str] | None, *, store=None, embedder=None,
                 corpus: str = "notes"):
        from remembrancer.indexer.config import CODE, COMMITS, load_config
        from remembrancer.indexer.engine import Engine
        from remembrancer.indexer.ingest.commit_log import commits_config

        self.queries_path = queries_path
        self.cases = load_cases(queries_path)
        if not root_args:
            found = corpus_dir(self.cases, queries_path)
            root_args = [str(found)] if found else None
        self.config = load_config(root_args)
        if corpus == CODE:   # the roots are source folders
            self.config = load_config(root_args, code_args=root_args).code_config()
            if self.config is None:
                raise UserError("--corpus code needs the source folders: --root DIR", param="root")
        if corpus == COMMITS:
            self.config = commits_config(self.config)
            if self.config is None:
                raise UserError("--corpus commits: the roots are in no git repository", param="corpus")
        self.engine = Engine(self.config, store=store, embedder=embedder)
        try:
            self.index = self.engine.refresh(progress=_tty_progress())
        except BaseException:
            self.engine.close()
            raise
        self._docs: dict[str, str] = {}
        self._sections: dict[str, list] = {}

    def __enter__(self) -> "EvalSession":
        return self

    def __exit__(self, *exc) -> None:
        self.engine.close()

    def _document_text(self, path: str) -> str:
        from remembrancer.indexer.search.reader import read

        if path not in self._docs and self.config.kind != "notes":   # no file: the text the catalog holds
            self._docs[path] = "\n".join(s.content or "" for s in self.engine.catalog.sections(path))
        if path not in self._docs:
            try:
                self._docs[path] = read(self.engine.view(), path, max_chars=sys.maxsize).content
            except UserError:  # deleted since indexing: nothing to quote from
                self._docs[path] = ""
        return self._docs[path]

    def labelled_texts(self, case: Case, params: dict) -> list[str]:
        """The text of every section a T1≥2 label names (`heading: null`: every section of the file), as
        the catalog holds it and redacted as the answer to `params` is: with the policy in force, then
        the pieces of secrets the request typed (indexer/api.py)."""
        from remembrancer.indexer.api import echoes_redacted

        redactor = self.engine.redaction.current()
        texts = []
        for lab in recall_labels(case.expect):
            if lab.path not in self._sections:
                self._sections[lab.path] = self.engine.catalog.sections(lab.path)
            texts += [s.content or "" for s in self._sections[lab.path]
                      if lab.heading is None or heading_key(s.heading) == heading_key(lab.heading)]
        return [echoes_redacted(redactor, redactor.redact_text(t), params) for t in texts]

    def score(self, limit: int = 5, alternates: dict[str, list[str]] | None = None,
              meter: ResponseMeter | None = None) -> dict:
        """Every question searched through the socket's path (api.dispatch_read: the answer a daemon
        sends the MCP server); with a `meter`, each response is also rendered and measured."""
        from remembrancer.indexer.answers import Freshness
        from remembrancer.indexer.api import dispatch_read
        from remembrancer.indexer.search.answer import MAX_LIMIT

        if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise UserError(f"limit must be between 1 and {MAX_LIMIT}, got {limit!r}", param="limit")
        cases = self.cases

        def params(case: Case) -> dict:
            p = {"query": case.query, "limit": limit}
            if alternates and alternates.get(case.id):
                p["alternates"] = alternates[case.id]
            return p

        # The index was refreshed when the session opened: every answer says so, as a daemon's would.
        fresh = Freshness.judged(self.engine.view().status(), "fresh", detail="at the on-disk state")

        def search(p: dict) -> dict:
            return dispatch_read(self.engine, "search", p, lambda view: fresh)

        # The first search loads the embedding model; time it apart so p50/p95 are steady-state.
        t0 = time.perf_counter()
        search(params(cases[0]))
        warmup_ms = (time.perf_counter() - t0) * 1000
        outcomes = []
        for case in cases:
            # Wall time, and the process's CPU time (every thread's: onnxruntime runs a query on two),
            # which other processes on a shared machine inflate far less than wall time.
            p = params(case)
            t0, c0 = time.perf_counter(), time.process_time()
            out = search(p)  # the MCP tool's path
            ms, cpu_ms = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
            o = {**_outcome(case, out, ms, self._document_text), "cpu_ms": cpu_ms}
            if meter is not None:
                o.update(_measured(case, meter.render(out), meter, lambda: self.labelled_texts(case, p)))
            outcomes.append(o)
        report = build_report(outcomes, limit)
        report["latency_ms"]["warmup"] = round(warmup_ms, 1)
        report.update(queries=str(self.queries_path), roots=[str(r.path) for r in self.config.roots],
                      index=self.index.to_dict())
        return report


def _outcome(case: Case, out: dict, ms: float, document_text) -> dict:
    """One query's raw outcome: the judged list (best_weak when it abstained) and its verdicts."""
    abstained = bool(out.get("no_strong_match"))
    ranked = out.get("best_weak", []) if abstained else out.get("results", [])
    o = {"case": case, "abstained": abstained, "ms": ms, "top": ranked[:MISS_SHOWN], "self_quote": False,
         "ranking": [show(r) for r in ranked], "found_by": out.get("found_by")}
    if case.answerable:
        o["judged"] = judge(case, ranked)
        hits = [r["path"] for r in ranked if any(is_hit(r, lab, lenient=True) for lab in case.expect)]
        o["self_quote"] = any(quotes_query(case.query, document_text(p)) for p in dict.fromkeys(hits))
    return o


def _measured(case: Case, response: str, meter: ResponseMeter, labelled_texts) -> dict:
    """The rendered response's size, and for an answerable question whether it holds a right section whole."""
    o = {"response_tokens": meter.count_tokens(response)}
    if case.answerable:
        o["in_context"] = in_context(response, labelled_texts())
    return o


def context_summary(outcomes: list[dict]) -> dict | None:
    """Answer in context over the answerable questions, response tokens over every question; None
    when the responses were not measured."""
    tokens = [o["response_tokens"] for o in outcomes if "response_tokens" in o]
    if not tokens:
        return None
    judged = [o for o in outcomes if "in_context" in o]
    held = [o for o in judged if o["in_context"]]

    def ids(in_ctx: bool, right_first: bool) -> list[str]:   # right first as T1≥2 counts it (best_weak if abstained)
        return [o["case"].id for o in judged if o["in_context"] is in_ctx and (o["judged"]["rank_any"] == 1) is right_first]

    return {"in_context": len(held), "answerable": len(judged),
            "rate": round(len(held) / len(judged), 4) if judged else 0.0,
            "missing_ids": [o["case"].id for o in judged if not o["in_context"]],
            # where it parts from T1≥2: a right first answer cut to fit or withheld (abstained, pointers only);
            # a right section carried whole below a wrong first one
            "right_first_not_whole": ids(False, True), "whole_not_right_first": ids(True, False),
            "tokens_p50": percentile(tokens, 50), "tokens_p90": percentile(tokens, 90)}


def build_report(outcomes: list[dict], limit: int) -> dict:
    """Aggregate per-query outcomes into the report (pure, so it is testable without an engine)."""
    answerable = [o for o in outcomes if o["case"].answerable]
    unanswerable = [o for o in outcomes if not o["case"].answerable]
    strata: dict[str, list[dict]] = {}
    for o in answerable:
        strata.setdefault(o["case"].stratum, []).append(o["judged"])
    fallback = [o["case"].id for o in answerable if not any(e.grade >= 3 for e in o["case"].expect)]
    false_abst = [o["case"].id for o in answerable if o["abstained"]]
    missed_abst = [o["case"].id for o in unanswerable if not o["abstained"]]
    ms = [o["ms"] for o in outcomes]
    cpu = [o["cpu_ms"] for o in outcomes if "cpu_ms" in o]
    misses = []
    for o in outcomes:
        c = o["case"]
        if c.answerable and o["judged"]["rank"] == 1:
            continue
        if not c.answerable and o["abstained"]:
            continue
        misses.append({
            "id": c.id, "query": c.query, "stratum": c.stratum,
            "kind": "retrieval" if c.answerable else "should_abstain",
            "rank": o["judged"]["rank"] if c.answerable else None,
            "abstained": o["abstained"],
            "expected": [lab.show() for lab in primary_labels(c.expect)],
            "got": [show(r) for r in o["top"]],
        })
    quotes = [o["case"].id for o in outcomes if o["self_quote"]]
    context = context_summary(outcomes)
    return {
        "limit": limit,
        "queries_total": len(outcomes),
        "overall": aggregate([o["judged"] for o in answerable]),
        "strata": {name: aggregate(js) for name, js in strata.items()},
        "abstention": {
            "unanswerable": len(unanswerable), "abstained": len(unanswerable) - len(missed_abst),
            "missed_ids": missed_abst,
            "abstained_ids": [o["case"].id for o in unanswerable if o["abstained"]],
            "answerable": len(answerable), "false_abstentions": len(false_abst),
            "false_abstention_rate": round(len(false_abst) / len(answerable), 4) if answerable else 0.0,
            "false_ids": false_abst,
        },
        "self_quote": {"count": len(quotes), "ids": quotes, "min_words": SELF_QUOTE_MIN_WORDS},
        "latency_ms": {"p50": round(percentile(ms, 50), 1), "p95": round(percentile(ms, 95), 1),
                       "max": round(max(ms), 1) if ms else 0.0,
                       **({"cpu_p50": round(percentile(cpu, 50), 1), "cpu_p95": round(percentile(cpu, 95), 1)}
                          if cpu else {})},
        "grade_fallback": {"count": len(fallback), "ids": fallback},
        **({"context": context} if context else {}),
        "misses": misses,
        # every query's ranked list (best_weak when it abstained): two runs compare equal or not
        "rankings": {o["case"].id: o.get("ranking", []) for o in outcomes},
        "right_first_ids": [o["case"].id for o in answerable if o["judged"].get("rank_any") == 1],
        "strict_first_ids": [o["case"].id for o in answerable if o["judged"].get("rank") == 1],
    }


def compare_rerank(queries_path: str, root_args: list[str] | None, limit: int = 5, corpus: str = "notes") -> dict:
    """The user's own cases scored twice on one index, the configured `[rerank]` off and on: a
    cross-encoder helps some corpora and costs others their recall, so it is measured, not assumed."""
    with EvalSession(queries_path, root_args, corpus=corpus) as session:
        spec = session.config.rerank
        if spec is None:
            raise UserError("--compare rerank needs a reranker configured", param="compare",
                            hint="add a [rerank] table (path or url) to the config; see docs/models.md")
        session.config.rerank = None
        try:
            off = session.score(limit)
        finally:
            session.config.rerank = spec
        on = session.score(limit)
    before, after = set(off["right_first_ids"]), set(on["right_first_ids"])
    return {"reranker": spec.describe(), "off": off, "on": on,
            "helped": sorted(after - before), "hurt": sorted(before - after)}


def format_compare(report: dict, misses: bool = False) -> str:
    off, on = report["off"], report["on"]
    lines = ["reranker off:", format_report(off, misses), "", f"{report['reranker']} on:", format_report(on, misses), ""]
    for key, name in (("top1_any", "right first (T1≥2)"), ("top1", "strict Top-1"), ("mrr", "MRR")):
        a, b = off["overall"].get(key, 0.0), on["overall"].get(key, 0.0)
        fmt = (lambda x: f"{x:.3f}") if key == "mrr" else (lambda x: f"{100 * x:.1f} %")
        lines.append(f"{name}: {fmt(a)} off, {fmt(b)} on")
    lines.append(f"latency p95: {off['latency_ms']['p95']:.1f} ms off, {on['latency_ms']['p95']:.1f} ms on")
    lines.append(f"the reranker put a right answer first for {len(report['helped'])} question(s)"
                 + (f" ({', '.join(report['helped'])})" if report["helped"] else "")
                 + f" and took it away from {len(report['hurt'])}"
                 + (f" ({', '.join(report['hurt'])})" if report["hurt"] else ""))
    verdict = len(report["helped"]) - len(report["hurt"])
    lines.append("turn it on" if verdict > 0 else "leave it off" if verdict < 0 else "no difference on these cases")
    return "\n".join(lines)


# -- text ----------------------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def format_report(report: dict, misses: bool = False) -> str:
    """A compact table for a terminal: strict Top-k/MRR, lenient Top-1/5, Recall@5, Top-1 over every label
    graded 2 or 3 (T1≥2); then verdict lines."""
    strata = report.get("strata", {})
    width = max([len("overall")] + [len(s) + 2 for s in strata])
    lines = []
    if report.get("queries"):
        lines.append(f"{report['queries']}  ({report.get('queries_total', 0)} queries, limit {report.get('limit')})")
    lines.append(f"{'':<{width}}  {'n':>4}  {'Top1':>5} {'Top3':>5} {'Top5':>5} {'MRR':>5}  "
                 f"{'lTop1':>5} {'lTop5':>5}  {'R@5':>5}  {'T1≥2':>5}")

    def row(name: str, m: dict) -> str:
        return (f"{name:<{width}}  {m['n']:>4}  {_pct(m['top1'])} {_pct(m['top3'])} {_pct(m['top5'])} "
                f"{m['mrr']:5.3f}  {_pct(m['top1_lenient'])} {_pct(m['top5_lenient'])}  {_pct(m['recall5'])}"
                f"  {_pct(m.get('top1_any', 0.0))}")

    lines.append(row("overall", report["overall"]))
    if len(strata) > 1:
        lines += [row("  " + name, m) for name, m in strata.items()]
    a = report["abstention"]
    abst = (f"abstention: {a['abstained']}/{a['unanswerable']} unanswerable abstained"
            if a["unanswerable"] else "abstention: no unanswerable rows")
    abst += (f"; false abstentions {a['false_abstentions']}/{a['answerable']} answerable "
             f"({100 * a['false_abstention_rate']:.1f}%)")
    lines.append(abst)
    q = report["self_quote"]
    lines.append(f"self-quote: {q['count']} hit document(s) contain the question verbatim"
                 + (f": {', '.join(q['ids'])}" if q["ids"] else ""))
    lat = report["latency_ms"]
    lines.append(f"latency: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms, max {lat['max']:.1f} ms"
                 + (f" (CPU p50 {lat['cpu_p50']:.1f}, p95 {lat['cpu_p95']:.1f} ms)" if "cpu_p95" in lat else "")
                 + (f" (first search, untimed above: {lat['warmup']:.0f} ms)" if "warmup" in lat else ""))
    fb = report.get("grade_fallback", {})
    if fb.get("count"):
        lines.append(f"note: {fb['count']} row(s) have no grade-3 label; scored on their best grade")
    if misses:
        shown = report.get("misses", [])
        lines.append(f"misses ({len(shown)}): top-1 not a strict hit, or no abstention on an unanswerable row")
        for m in shown:
            where = ("should abstain" if m["kind"] == "should_abstain"
                     else f"rank {m['rank']}" if m["rank"] else "not found")
            flag = ", abstained" if m["abstained"] and m["kind"] == "retrieval" else ""
            lines.append(f"  {m['id']} [{where}{flag}] {m['query']}")
            if m["expected"]:
                lines.append(f"    expected: {' | '.join(m['expected'])}")
            for i, g in enumerate(m["got"], 1):
                lines.append(f"    {i}. {g}")
    return "\n".join(lines)
