"""Score every dev set in one run: one table, the plain weighted hybrid as a baseline row, and a
per-rule ablation with its effect on each corpus separately (docs/ranking.md is written from it).

    .venv/bin/python bench/eval_all.py [--eval-dir ../shared/eval] [--sets docs-dev memory-dev-2 …]
        [--alternates ../shared/eval/alternates] [--ablation] [--json out.json] [--fresh]
        [--ranking KEY=VALUE …] [--const NAME=VALUE …] [--ingest NAME=VALUE … --fresh]
        [--sweep KEY=V1,V2,… … [--loco]]

Every search goes through `remembrancer eval`'s code path (indexer.search.evaluate → api.dispatch_read, the
MCP `search` tool's path). Each corpus is indexed once and kept in `--data-dir` (default
bench/results/index-cache: building mm-v2 with the real model takes ~100 s on this machine, a
rerun opens it in a second); all configurations are then scored on the same open index.
`--ingest` switches off what indexing reads from the notes (`FRONT_MATTER_PREAMBLE`, `INFER_TYPES`, `WEEK_DATES`, `DESCRIPTION_IN_CONTEXT`) for
every row: it changes the index, so it needs `--fresh` (a document parsed in the sandbox's own interpreter,
over sandbox.LARGE_BYTES, is read as shipped: on the dev sets one mm-v2 file). `--fresh` indexes into a new temporary folder instead (what the determinism check needs: two
`--fresh` runs must print the same ranking digests).

Configurations: `shipped` (the defaults, with `--ranking`/`--const` applied), `plain` (the plain
weighted hybrid: BM25 + dense 0.7, best passage per section, no literal leg, no heading passage,
no rules, no abstention), and with `--ablation` each rule or constant switched off alone.
`right` counts questions answered right by the set's primary figure: an answerable one whose first
result is right (a strict hit; on a memory set any label graded 2 or 3) and that did not abstain, an
unanswerable one that abstained; `--json` lists them (`right_ids`). `T1≥2` is Top-1 over every label graded 2 or
3 ("equally correct"): the distance between it and Top1 is the labeller's preference between right
answers (docs/ranking.md, "How ranking is evaluated"). The team rule reads the ablation: a rule
is kept only if it helps on at least two corpora and costs no corpus more than one question.

`--sweep KEY=V1,V2,…` scores the shipped row with a [ranking] setting or search constant at each value.
With `--loco` (leave one corpus out) each swept key's value is chosen with each set held out in turn:
the value with the most questions right on the other sets (ties: the shipped value if it is among them,
else the one nearest it, of two as near the smaller), and the held-out set's questions right at that value
minus at the shipped value is printed (`loco`), with a row summing every key's; a second table reads the
rows with rephrasings when `--alternates` is given. The shipped value is RankingConfig()'s default or
answer.py's constant, after `--ranking`/`--const`; it is added to the sweep when not listed.

Memory sets (memory-dev, -2, -3, and any named with `--memory-set`) are read right-first (T1≥2): several of
their sections state the same fact and which got the 3 was the labeller's preference; docs sets are read on
strict Top-1 (one answer each).
Each set's header line names its primary figure.

`ctx` is answer in context, what a reading agent gets from one call: the share of answerable questions
whose response — the MCP `search` tool's text, rendered by mcp_server/render.py's `search_text` from the
answer the socket sends — holds the whole text of a section labelled 2 or 3 (whitespace-normalised; the
section's catalog text redacted as the answer is). `tok` is the median / p90 of that text's length over
every question, in tokens of the default model's tokenizer (all-MiniLM-L6-v2's WordPiece tokenizer.json,
the one indexer/models/embed.py loads; no special tokens, no truncation). Clients that hand the model the
structured content instead (Claude Code, VS Code) get the same answer as JSON, larger.

Each row's p95 is its searches' wall time and, in brackets, their CPU time (the process's, every
thread's), each question searched once after one untimed search that loads the model: a rough
figure on a shared machine. Latency before and after a change: bench/bench_search_latency.py
(each question's fastest of several, two versions of the code in one run with --against).
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from copy import deepcopy
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remembrancer.indexer.search import answer as search# noqa: E402
from remembrancer.indexer.search.evaluate import EvalSession, ResponseMeter  # noqa: E402
from remembrancer.indexer.search.rank import RankingConfig  # noqa: E402
from remembrancer.indexer.errors import UserError  # noqa: E402
from remembrancer.indexer.ingest import document as ingest_document, markdown as ingest_markdown, meta as ingest_meta  # noqa: E402

COMMITS_SET = "commits"   # not a dev set of ../shared/eval: a git history the tests make (open_session)
CODE_SET = "code"         # this checkout's source and tests/data/code's questions; asked by name (--sets code)
SETS = ("mm-v1.dev", "mm-v2.dev", "docs-dev", "qmd", "memory-dev", "memory-dev-2", "memory-dev-3", COMMITS_SET)
SHORT = {"mm-v1.dev": "mm-v1", "mm-v2.dev": "mm-v2", "docs-dev": "docs", "qmd": "qmd",
         "memory-dev": "mem1", "memory-dev-2": "mem2", "memory-dev-3": "mem3", COMMITS_SET: "commits", CODE_SET: "code"}
# What --ingest may switch off: the indexing switch → the module that holds it.
INGEST_SWITCHES = {"FRONT_MATTER_PREAMBLE": ingest_markdown, "INFER_TYPES": ingest_meta, "WEEK_DATES": ingest_meta,
                   "DESCRIPTION_IN_CONTEXT": ingest_document}
MEMORY_SETS = ("memory-dev", "memory-dev-2", "memory-dev-3")   # read right-first (T1≥2)
ROOT = Path(__file__).resolve().parent.parent

# The plain weighted hybrid: what every stratum must stay at or above.
PLAIN = {"const": {"HEADING_PASSAGE_WEIGHT": 0.0, "LITERAL_LEG": False,
                   "ABSTENTION": False, "DEFINITIONS_FIRST": False, "CODE_BETWEEN_WEIGHT": 1.0,
                   "POINTER_CREDIT": False, "ALIAS_NAMES": False, "EVENT_CREDIT": False},
         "ranking": {"enabled": False}}

# Each rule or constant switched off alone: name → the overrides that switch it off.
ABLATIONS = {
    "heading passage (×0.88)": {"const": {"HEADING_PASSAGE_WEIGHT": 0.0}},
    "literal leg": {"const": {"LITERAL_LEG": False}},
    "abstention": {"const": {"ABSTENTION": False}},
    "abstention by answer type": {"const": {"ANSWER_TYPE_ABSTENTION": False}},
    "pointer credit": {"const": {"POINTER_CREDIT": False}},
    "alias names (dense)": {"const": {"ALIAS_NAMES": False}},
    "event credit": {"const": {"EVENT_CREDIT": False}},
    "identifiers first": {"const": {"IDENTIFIERS_FIRST": False}},
    "latest occurrence": {"const": {"LATEST_OCCURRENCE": False}},
    "days a section's text writes": {"const": {"DAYS_WRITTEN": False}},
    "all memory rules": {"ranking": {"enabled": False}},
}
for _key, _off in (("howto_steps_boost", 1.0),
                   ("fact_history_factor", 1.0), ("rule_swing", 0.0),
                   ("detail_margin", 0.0), ("stale_factor", 1.0), ("outcome_tie_margin", 0.0)):
    if hasattr(RankingConfig(), _key):
        ABLATIONS[_key] = {"ranking": {_key: _off}}


def leg_settings() -> tuple:
    """Every scalar constant of indexer/search/answer.py as now set. The legs are cached per value of all of
    them, not of a list of the ones the legs read: a constant added to the legs for an experiment
    and swept would otherwise be scored with the first value's legs for every value."""
    return tuple(sorted((k, v) for k, v in vars(search).items()
                        if k.isupper() and isinstance(v, (bool, int, float, str))))


class LegCache:
    """During the ablation, each phrasing's legs (BM25, dense, literal, fusion) are computed once per
    setting of the search constants (leg_settings) and copied for every rule configuration: the
    rules, abstention and results run as in the product.
    Latency figures are taken from the uncached rows only."""

    def __init__(self):
        self.legs: dict = {}
        self.vecs: dict = {}
        self.phrasing, self.query_vectors = search._phrasing, search._query_vectors

    def __enter__(self):
        search._phrasing, search._query_vectors = self._cached_phrasing, self._cached_vectors
        return self

    def __exit__(self, *exc):
        search._phrasing, search._query_vectors = self.phrasing, self.query_vectors

    def _cached_vectors(self, engine, query, alternates):
        key = (id(engine), query, tuple(alternates))
        if key not in self.vecs:
            self.vecs[key] = self.query_vectors(engine, query, alternates)
        return self.vecs[key]

    def _cached_phrasing(self, view, query, qvec, shared, it):
        if shared.allowed is not None:
            return self.phrasing(view, query, qvec, shared, it)
        key = (id(view), query, repr(it), leg_settings())   # the legs read what the question asks for
        if key not in self.legs:
            self.legs[key] = self.phrasing(view, query, qvec, shared, it)
        ph = self.legs[key]
        # a copy the rules can change: every other field of the phrasing as it was
        return ph._replace(cands={sid: replace(c, why=list(c.why)) for sid, c in ph.cands.items()},
                           probes_found=set(ph.probes_found))


def primary_figure(name: str) -> str:
    return "right-first T1≥2" if name in MEMORY_SETS else "strict Top1"


def response_meter() -> ResponseMeter:
    """The MCP `search` tool's text, measured in the default model's tokens (see the module docstring)."""
    from tokenizers import Tokenizer

    from remembrancer.indexer.answers import SearchAnswer
    from remembrancer.indexer.models.embed import DEFAULT_TOKENIZER_DIST, DEFAULT_TOKENIZER_FILE, _package_file
    from remembrancer.mcp_server.render import search_text

    tokenizer = Tokenizer.from_file(str(_package_file(DEFAULT_TOKENIZER_DIST, DEFAULT_TOKENIZER_FILE)))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return ResponseMeter(render=lambda out: search_text(SearchAnswer.parse(out)),
                         count_tokens=lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids))


def _value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def override(name: str, value: str) -> tuple[str, object]:
    """Which part a KEY=VALUE override goes to — a search constant (upper case) of answer.py, or a
    [ranking] setting — and its typed value; ValueError names an unknown one."""
    if name.isupper():
        if not hasattr(search, name):
            raise ValueError(f"no constant {name!r} in indexer/search/answer.py")
        return "const", type(getattr(search, name))(_value(value))
    try:   # checked as a config file's [ranking] table is: kind and range
        return "ranking", getattr(RankingConfig.from_dict({name: _value(value)}), name)
    except UserError as e:
        raise ValueError(e.message) from None


class Applied:
    """A configuration in force for one scoring run: search constants set, the ranking replaced."""

    def __init__(self, session: EvalSession, overrides: dict):
        self.session, self.overrides = session, overrides

    def __enter__(self):
        self.saved_const = {k: getattr(search, k) for k in self.overrides.get("const", {})}
        for k, v in self.overrides.get("const", {}).items():
            setattr(search, k, v)
        self.saved_ranking = self.session.engine.config.ranking
        r = self.overrides.get("ranking")
        if r:
            cfg = deepcopy(self.saved_ranking)
            for k, v in r.items():
                if k == "type_weights":
                    cfg.type_weights = {**cfg.type_weights, **v}
                else:
                    setattr(cfg, k, v)
            self.session.engine.config.ranking = cfg
        return self

    def __exit__(self, *exc):
        for k, v in self.saved_const.items():
            setattr(search, k, v)
        self.session.engine.config.ranking = self.saved_ranking


def right_ids(report: dict, name: str) -> list[str]:
    """The questions answered right, by the set's primary figure (see the module docstring): an
    answerable one whose first result is right (strict, or T1≥2 on a memory set) and that did not
    abstain, a no-answer one that abstained."""
    a = report["abstention"]
    firsts = set(report["right_first_ids" if name in MEMORY_SETS else "strict_first_ids"])
    return sorted((firsts - set(a["false_ids"])) | set(a["abstained_ids"]))


def summarise(name: str, report: dict) -> dict:
    """The figures the tables print, plus a digest of every ranked list (determinism)."""
    o, a = report["overall"], report["abstention"]
    digest = hashlib.sha256(json.dumps(report["rankings"], sort_keys=True).encode()).hexdigest()[:12]
    right = right_ids(report, name)
    return {"top1": o["top1"], "top5": o["top5"], "mrr": o["mrr"], "n": o["n"], "top1_any": o["top1_any"],
            # each stratum by the set's primary figure too (right-first on a memory set), as `right` counts
            "strata": {k: {"top1": v["top1"], "top1_any": v["top1_any"], "top5": v["top5"], "n": v["n"],
                           "primary": v["top1_any" if name in MEMORY_SETS else "top1"]}
                       for k, v in report["strata"].items()},
            "abstained": a["abstained"], "unanswerable": a["unanswerable"],
            "false": a["false_abstentions"], "answerable": a["answerable"],
            "p95": report["latency_ms"]["p95"], "cpu_p95": report["latency_ms"].get("cpu_p95", 0.0),
            "right": len(right), "right_ids": right, "digest": digest,
            "context": report.get("context"), "false_ids": a["false_ids"]}


def score(session: EvalSession, overrides: dict, alternates: dict | None, meter: ResponseMeter) -> dict:
    with Applied(session, overrides):
        return session.score(5, alternates, meter)


def fmt_row(name: str, s: dict) -> str:
    strata = " ".join(f"{k}={v['primary'] * 100:.0f}" for k, v in s["strata"].items())
    ab = f"{s['abstained']}/{s['unanswerable']}" if s["unanswerable"] else "-"
    c = s["context"]
    return (f"  {name:<22} Top1 {s['top1'] * 100:5.1f}  Top5 {s['top5'] * 100:5.1f}  MRR {s['mrr']:.3f}"
            f"  T1≥2 {s['top1_any'] * 100:5.1f}  ctx {c['rate'] * 100:5.1f}  tok {c['tokens_p50']:>4}/{c['tokens_p90']:<4}"
            f"  abst {ab:>4}  false {s['false']}/{s['answerable']}  right {s['right']:>3}"
            f"  p95 {s['p95']:4.0f}ms (CPU {s['cpu_p95']:3.0f})  #{s['digest']}  [{strata}]")


def context_gaps(name: str, s: dict) -> str:
    """Where ctx parts from T1≥2: the questions, by id (an abstention withholds the right first answer)."""
    c, abstained = s["context"], set(s["false_ids"])
    withheld = [i + (" (abstained)" if i in abstained else " (cut)") for i in c["right_first_not_whole"]]
    return (f"  {name + ' ctx vs T1≥2':<22} right first but not whole: {', '.join(withheld) or '-'};"
            f" whole though not right first: {', '.join(c['whole_not_right_first']) or '-'}")


def open_session(name: str, eval_dir: str, in_git: str | None = None) -> EvalSession:
    """A set's open, refreshed index: a dev set of `eval_dir`, or COMMITS_SET — the commits corpus
    of a git history made for it (tests/support/commit_history.py: its questions, labelled by
    commit), built in a temporary folder with the git CLI; or CODE_SET, this checkout as a code corpus.
    With `in_git` (a day), a plain-folder set is read as notes kept in git: a copy committed on that
    day (in_git_copy)."""
    if name == CODE_SET:   # this checkout's own source, as `remembrancer eval --corpus code` reads it
        return EvalSession(str(ROOT / "tests" / "data" / "code" / "questions.jsonl"), [str(ROOT)], corpus="code")
    if name != COMMITS_SET:
        queries = Path(eval_dir) / "queries" / f"{name}.jsonl"
        if in_git is None:
            return EvalSession(str(queries), None)
        return EvalSession(str(queries), [str(in_git_copy(queries, in_git))])
    from tests.support.commit_history import build, cases

    where = Path(tempfile.mkdtemp(prefix="eval-commits-"))
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    queries = where / "commits.jsonl"
    queries.write_text("".join(json.dumps(c) + "\n" for c in cases(build(where / "tollgate"))))
    return EvalSession(str(queries), [str(where / "tollgate")], corpus="commits")


def in_git_copy(queries: Path, day: str) -> Path:
    """The set's corpus as notes kept in git: copied (once) beside the index cache's data and
    committed with the git CLI on `day`, so an undated file is dated by that commit as a user's
    would be. The dev and lab corpora are plain folders dated years ahead: a commit after their
    newest note is what a user's repository holds, and the rules must not read it as an account."""
    from tests.support.memory import commit, git

    with queries.open() as rows:
        source = queries.parent.parent / json.loads(next(line for line in rows if line.strip()))["corpus"]
    where = Path(os.environ["REMEMBRANCER_DATA_DIR"]) / "in-git" / f"{source.name}-{day}"
    if not (where / ".git").is_dir():
        shutil.rmtree(where, ignore_errors=True)
        shutil.copytree(source, where, ignore=shutil.ignore_patterns(".git"))
        git(where, "init", "-q", "-b", "main")
        commit(where, "notes", f"{day}T12:00:00Z")
    return where


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--memory-set", action="append", default=[], metavar="NAME",
                    help="read this set right-first (T1≥2) as the memory sets are: a memory corpus of your own "
                         "or a held-out one, e.g. --eval-dir LAB --sets vault --memory-set vault (repeatable)")
    ap.add_argument("--alternates", metavar="DIR", help="score each set also with the rephrasings in DIR/<set>.json")
    ap.add_argument("--ablation", action="store_true", help="switch each rule off alone, on every set")
    ap.add_argument("--data-dir", default=str(ROOT / "bench" / "results" / "index-cache"),
                    help="where the indexes are kept between runs")
    ap.add_argument("--fresh", action="store_true", help="index into a new temporary folder (determinism check)")
    ap.add_argument("--in-git", metavar="YYYY-MM-DD",
                    help="read each notes set as notes kept in git: a copy committed on that day (after its newest note)")
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true", help="also print the tables as Markdown (docs/ranking.md)")
    ap.add_argument("--ranking", action="append", default=[], metavar="KEY=VALUE",
                    help="override a [ranking] setting for the shipped row, e.g. outcome_tie_margin=0.2 (repeatable)")
    ap.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                    help="override a constant of indexer/search/answer.py for the shipped row, e.g. "
                         "HEADING_PASSAGE_WEIGHT=1.0 (repeatable)")
    ap.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,…",
                    help="also score the shipped row with a [ranking] setting or a search constant at each "
                         "value (repeatable); prints questions right per corpus for each")
    ap.add_argument("--loco", action="store_true",
                    help="with --sweep: leave one corpus out — per swept key and held-out set, the value best on "
                         "the other sets and what it does to the held-out one (the shipped value is swept too)")
    ap.add_argument("--ingest", action="append", default=[], metavar="NAME=VALUE",
                    help="an indexing switch for every row (markdown.FRONT_MATTER_PREAMBLE, meta.INFER_TYPES, meta.WEEK_DATES, "
                         "document.DESCRIPTION_IN_CONTEXT), "
                         "e.g. INFER_TYPES=False; needs --fresh")
    args = ap.parse_args()
    global MEMORY_SETS
    MEMORY_SETS = (*MEMORY_SETS, *args.memory_set)
    for kv in args.ingest:   # before any index is opened: what the notes are read as
        name, _, value = kv.partition("=")
        module = INGEST_SWITCHES.get(name)
        if module is None:
            ap.error(f"--ingest: no indexing switch {name!r} (one of {', '.join(INGEST_SWITCHES)})")
        if not args.fresh:
            ap.error("--ingest changes what is indexed: add --fresh (a kept index was read without it)")
        setattr(module, name, type(getattr(module, name))(_value(value)))
    def setting(flag: str, name: str, value: str) -> tuple[str, object]:
        try:
            return override(name, value)
        except ValueError as e:
            ap.error(f"{flag}: {e}")

    shipped: dict = {"const": {}, "ranking": {}}
    for kv in args.const:
        name, _, value = kv.partition("=")
        if not name.isupper():
            ap.error(f"--const: no constant {name!r} in indexer/search/answer.py")
        shipped["const"][name] = setting("--const", name, value)[1]
    for kv in args.ranking:
        name, _, value = kv.partition("=")
        if name.startswith("type_weights."):   # type_weights.plan=0.85: one doc type's multiplier
            shipped["ranking"].setdefault("type_weights", {})[name.split(".", 1)[1]] = float(value)
            continue
        if name.isupper():
            ap.error(f"--ranking: no [ranking] setting {name!r}")
        shipped["ranking"][name] = setting("--ranking", name, value)[1]
    configs = {"shipped": shipped, "plain": PLAIN}
    if args.ablation:
        configs.update({f"-{k}": {"const": {**shipped["const"], **v.get("const", {})},
                                  "ranking": {**shipped["ranking"], **v.get("ranking", {})}}
                        for k, v in ABLATIONS.items()})
    if args.loco and not args.sweep:
        ap.error("--loco needs one or more --sweep KEY=V1,V2,…")
    sweeps: dict = {}   # swept key → (its shipped value, [(text, value), …])

    def swept(part: str, name: str, text: str, value) -> None:   # the shipped row with one value changed
        configs[f"={name}={text}"] = {"const": {**shipped["const"]}, "ranking": {**shipped["ranking"]}}
        configs[f"={name}={text}"][part][name] = value
        sweeps[name][1].append((text, value))

    for kv in args.sweep:
        name, _, values = kv.partition("=")
        for v in values.split(","):
            part, typed = setting("--sweep", name, v)
            sweeps.setdefault(name, (shipped[part].get(name, getattr(search if part == "const" else RankingConfig(),
                                                                        name)), []))
            swept(part, name, v, typed)
    if args.loco:   # each key's shipped value needs a row of its own to compare against
        for name, (base, values) in list(sweeps.items()):
            if all(typed != base for _, typed in values):
                swept("const" if name.isupper() else "ranking", name, str(base), base)
    meter = response_meter()
    tmp = tempfile.mkdtemp(prefix="eval-all-") if args.fresh else None
    os.environ["REMEMBRANCER_DATA_DIR"] = tmp or args.data_dir
    results: dict = {}
    try:
        for name in args.sets:
            t0 = time.perf_counter()
            alts = None
            if args.alternates:
                f = Path(args.alternates) / f"{name}.json"
                alts = json.loads(f.read_text()) if f.exists() else None
            with open_session(name, args.eval_dir, args.in_git) as session:
                built = time.perf_counter() - t0
                res = results[name] = {}
                for cname in ("shipped", "plain"):
                    res[cname] = summarise(name, score(session, configs[cname], None, meter))
                    if alts:
                        res[cname + "+alt"] = summarise(name, score(session, configs[cname], alts, meter))
                with LegCache():
                    for cname, overrides in configs.items():
                        if cname not in res:
                            res[cname] = summarise(name, score(session, overrides, None, meter))
                        if cname.startswith("=") and alts:   # a swept value, also with the rephrasings
                            res[cname + "+alt"] = summarise(name, score(session, overrides, alts, meter))
            print(f"{name}  (primary: {primary_figure(name)}; index {built:.0f}s, "
                  f"scored {time.perf_counter() - t0 - built:.0f}s)")
            for cname in ("plain", "plain+alt", "shipped", "shipped+alt"):
                if cname in res:
                    print(fmt_row(cname, res[cname]))
            for cname in ("shipped", "shipped+alt"):
                if cname in res:
                    print(context_gaps(cname, res[cname]))
            sys.stdout.flush()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.ablation:
        print_ablation(results, configs)
    if args.sweep:
        print_sweep(results, configs)
    if args.loco:
        print_loco(loco(results, sweeps), sweeps, "leave one corpus out", args.markdown)
        alt = loco(results, sweeps, "+alt")
        if alt["sets"]:   # the sets scored with rephrasings (--alternates)
            print_loco(alt, sweeps, "leave one corpus out, with the rephrasings", args.markdown)
    if args.markdown:
        print(markdown(results))
        print()
        print(context_markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


def print_ablation(results: dict, configs: dict) -> None:
    """Per rule: questions right it gains on each corpus (shipped − rule off) and the team rule's verdict."""
    sets = list(results)
    print("\nablation: questions right with the rule minus without it, per corpus (Top-1 hits that did not"
          " abstain — strict on a docs set, T1≥2 on a memory set — + no-answer rows abstained)")
    print(f"  {'rule':<30}" + "".join(f"{SHORT.get(s, s):>7}" for s in sets) + "   verdict")
    for cname in configs:
        if not cname.startswith("-"):
            continue
        deltas = [results[s]["shipped"]["right"] - results[s][cname]["right"] for s in sets]
        helps = sum(1 for d in deltas if d > 0)
        verdict = "keep" if helps >= 2 and min(deltas) >= -1 else "REMOVE" if helps < 2 or min(deltas) < -1 else "?"
        print(f"  {cname[1:]:<30}" + "".join(f"{d:>+7d}" for d in deltas) + f"   {verdict} (helps {helps})")
    print("\nthe same, counting any answer graded 2 or 3 as right (T1≥2, answerable questions only): a rule that"
          " helps above and not here moves answers between right ones, toward one labeller's preference")
    for cname in configs:
        if cname.startswith("-"):
            print(f"  {cname[1:]:<30}" + "".join(f"{any_right(results[s]['shipped']) - any_right(results[s][cname]):>+7d}"
                                                for s in sets))


def any_right(s: dict) -> int:
    """Answerable questions whose first result is a label graded 2 or 3."""
    return round(s["top1_any"] * s["n"])


def print_sweep(results: dict, configs: dict) -> None:
    """Per swept value: questions right on each corpus (the shipped row's in brackets)."""
    sets = list(results)
    print("\nsweep: questions right per corpus (shipped: " +
          ", ".join(f"{SHORT.get(s, s)} {results[s]['shipped']['right']}" for s in sets) + ")")
    for cname in [c for c in configs if c.startswith("=")] + [c + "+alt" for c in configs if c.startswith("=")]:
        shown = [s for s in sets if cname in results[s]]
        if shown:
            print(f"  {cname[1:]:<36}" + "".join(f"{SHORT.get(s, s)} {results[s][cname]['right']:>3}  " for s in shown)
                  + " [" + " ".join(f"{SHORT.get(s, s)}:{results[s][cname]['top1'] * 100:.1f}/{results[s][cname]['top5'] * 100:.1f}"
                                    for s in shown) + "]")


def loco(results: dict, sweeps: dict, suffix: str = "") -> dict:
    """Leave one corpus out: for each swept constant and each set held out, the value that gets the
    most questions right on the other sets, and the held-out set's questions right at it minus at the
    shipped value. `sweeps`: key → (shipped value, [(text, value), …] — the shipped value among them);
    the rows read are results[set][f"={key}={text}{suffix}"]. Ties on the other sets: the shipped value
    if it is among them, else the value nearest it (of two as near, the smaller; values that are not
    numbers: the first listed). Sets lacking a row (no rephrasings, for suffix "+alt") are left out.
    Returns {"sets": [...], "rows": {key: {set: (chosen text, delta)}}, "total": {set: sum of deltas}}."""
    rows_of = {key: [f"={key}={text}{suffix}" for text, _ in values] for key, (_, values) in sweeps.items()}
    sets = [s for s in results if all(r in results[s] for rows in rows_of.values() for r in rows)]
    table: dict = {"sets": sets, "rows": {}, "total": {s: 0 for s in sets}}
    for key, (shipped, values) in sweeps.items():
        at_shipped = next(f"={key}={text}{suffix}" for text, v in values if v == shipped)

        def nearness(i: int) -> tuple:
            try:
                return round(abs(float(values[i][1]) - float(shipped)), 9), float(values[i][1]), i
            except (TypeError, ValueError):
                return float("inf"), 0.0, i
        table["rows"][key] = {}
        for held in sets:
            others = [sum(results[s][f"={key}={text}{suffix}"]["right"] for s in sets if s != held)
                      for text, _ in values]
            tied = [i for i, n in enumerate(others) if n == max(others)]
            shipped_tied = [i for i in tied if values[i][1] == shipped]
            i = shipped_tied[0] if shipped_tied else min(tied, key=nearness)
            text = values[i][0]
            delta = results[held][f"={key}={text}{suffix}"]["right"] - results[held][at_shipped]["right"]
            table["rows"][key][held] = (text, delta)
            table["total"][held] += delta
    return table


def print_loco(table: dict, sweeps: dict, title: str, markdown: bool = False) -> None:
    """The leave-one-corpus-out table (loco): a row per swept constant, a column per held-out set."""
    sets = table["sets"]
    shipped_text = {key: next(t for t, v in values if v == shipped) for key, (shipped, values) in sweeps.items()}
    label = {key: f"{key} ({shipped_text[key]})" for key in table["rows"]}
    cells = {key: [f"{row[s][0]}: {row[s][1]:+d}" for s in sets] for key, row in table["rows"].items()}
    total = [f"{table['total'][s]:+d}" for s in sets]
    print(f"\n{title}: per set held out, the value chosen on the other sets and the held-out set's questions"
          " right at it minus at the shipped value")
    width = max([len(v) for v in label.values()] + [len("constant (shipped)")]) + 2
    col = max([len(c) for row in cells.values() for c in row] + [len(SHORT.get(s, s)) for s in sets]) + 2
    print(f"  {'constant (shipped)':<{width}}" + "".join(f"{SHORT.get(s, s):>{col}}" for s in sets))
    for key in table["rows"]:
        print(f"  {label[key]:<{width}}" + "".join(f"{c:>{col}}" for c in cells[key]))
    print(f"  {'all constants':<{width}}" + "".join(f"{c:>{col}}" for c in total))
    if markdown:
        print("\n| constant (shipped) | " + " | ".join(SHORT.get(s, s) for s in sets) + " |")
        print("|---|" + "---|" * len(sets))
        for key in table["rows"]:
            print(f"| {label[key]} | " + " | ".join(cells[key]) + " |")
        print("| all constants | " + " | ".join(total) + " |\n")


def context_markdown(results: dict) -> str:
    """Answer in context beside the ranked-list figures, per set and configuration (docs/benchmarks.md)."""
    rows = ["| set (primary figure) | configuration | Top-1 % | T1≥2 % | in context % | response tokens p50 / p90 "
            "| abstained |", "|---|---|---|---|---|---|---|"]
    for name, res in results.items():
        for cname in ("plain", "plain+alt", "shipped", "shipped+alt"):
            if cname in res:
                s, c = res[cname], res[cname]["context"]
                ab = f"{s['abstained']}/{s['unanswerable']}" if s["unanswerable"] else "—"
                rows.append(f"| {name} ({primary_figure(name)}) | {cname.replace('+alt', ' + alternates')} "
                            f"| {s['top1'] * 100:.1f} | {s['top1_any'] * 100:.1f} | {c['rate'] * 100:.1f} "
                            f"| {c['tokens_p50']} / {c['tokens_p90']} | {ab} |")
    return "\n".join(rows)


def markdown(results: dict) -> str:
    """The main table and the ablation as Markdown, the form docs/ranking.md quotes."""
    def cell(s: dict) -> str:
        strata = ", ".join(f"{k} {v['primary'] * 100:.0f}" for k, v in s["strata"].items())
        ab = f"; abst {s['abstained']}/{s['unanswerable']}" if s["unanswerable"] else ""
        return (f"{s['top1'] * 100:.1f} / {s['top5'] * 100:.1f} ({strata}){ab}; false {s['false']}/{s['answerable']}")
    rows = ["| set | plain weighted hybrid | shipped | shipped + alternates |", "|---|---|---|---|"]
    for name, res in results.items():
        rows.append(f"| {name} | {cell(res['plain'])} | {cell(res['shipped'])} | "
                    f"{cell(res['shipped+alt']) if 'shipped+alt' in res else '—'} |")
    ab = [c for c in next(iter(results.values())) if c.startswith("-")]
    if ab:
        sets = list(results)
        rows += ["", "| rule switched off alone | " + " | ".join(SHORT.get(s, s) for s in sets) + " |",
                 "|---|" + "---|" * len(sets)]
        for c in ab:
            rows.append(f"| {c[1:]} | " + " | ".join(f"{results[s]['shipped']['right'] - results[s][c]['right']:+d}"
                                                   for s in sets) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
