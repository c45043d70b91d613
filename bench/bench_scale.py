"""Scale benchmark (issue 12: costs that grow with the change, not with the corpus). On demand, never in CI.

    .venv/bin/python bench/bench_scale.py [--sizes 1000,5000,20000] [--real-model [--synthetic-vectors]]
                                          [--edits 20] [--queries 20] [--idle 20] [--no-daemon] [--no-mcp]
                                          [--against DIR]

Generates a memory-shaped corpus per size (seeded: journal days, host records, runbooks, lessons;
≈5 sections a document) as a git repo in a temp dir, then prints for each size, on this machine
and in this run:
- full index (seconds, ms per document)
- one edited file → refreshed, in-process: a full `refresh()` (stat walk) and the targeted
  `refresh_paths()` the daemon uses, p50/p95
- refresh with nothing changed
- the keyword index made again from the catalog (what an edit pays once a fifth of it is deleted
  documents: indexer/engine/writer.py KEYWORD_DEAD_SHARE), and the vector graph made again from the
  catalog's vectors (once half of it is deleted vectors: VECTOR_DEAD_SHARE)
- search kinds p50/p95 in-process (through indexer/api.py, as the daemon answers them): filters
  only (type + since), exact, a question holding identifiers, a paraphrase, `latest`, `history`,
  a paraphrase of everyday words, a long question
- through a real daemon on a real socket: one edit (an atomic save) → searchable, debounce
  included, p50/p95; its RSS once settled; its idle CPU
- through the real MCP stdio client (the MCP server talks to that daemon): every search kind p50/p95
  (filters, exact, identifier, paraphrase, latest, history, a paraphrase of everyday words the corpus
  lacks, a long question); with `--against DIR` also as another version of the code answers them
and, after all sizes, the growth ratio of every row from the smallest size to each larger one.
The tiny test model (tests/support/tiny_model.py) keeps embedding out of the figures (the shape of the
costs); `--real-model` uses the packaged default model for absolute ones. `--real-model
--synthetic-vectors` measures the daemon's memory at scale with the real 384-d model loaded: the
index is built with the model's contract and seeded synthetic passage vectors (embedding 100k
sections for real takes hours on 2 cores), then the daemon serves it with the real model: its RSS
after the edits and after the MCP searches (queries embedded for real), its peak, its idle CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
from bench.procstat import cpu_seconds, peak_rss_mb, rss_mb  # noqa: E402
from remembrancer.indexer.answers import Freshness  # noqa: E402
from remembrancer.indexer.search.evaluate import percentile  # noqa: E402  (nearest rank, one definition)

WORDS = """
restore recover backup database postgres dump table query index server configure config deploy
release build test commit branch merge host service restart log error disk memory cpu network dns
port socket file folder path user key token login shell script install update upgrade version
note plan runbook lesson search read write delete move cluster replica primary failover latency
timeout retry queue worker cache proxy certificate renew rotate alert threshold dashboard metric
quota storage volume snapshot mount kernel package daemon cron schedule job pipeline runner agent
migration schema rollback incident outage page escalate ticket vendor contract budget capacity
""".split()
FILLER = "the a of to and in for on with after before when then because so but not".split()
SERVICES = ["postgres", "pgbouncer", "nginx", "redis", "kafka", "grafana", "prometheus", "vault",
            "consul", "haproxy", "minio", "elasticsearch", "rabbitmq", "etcd", "coredns"]
VAGUE = ["problem", "thing", "issue", "stuff", "trouble", "situation", "setup", "mess"]   # never in the corpus
VERBS = ["restore", "failover", "upgrade", "rotate-certs", "resize-volume", "drain", "rebuild-index",
         "recover", "migrate", "tune"]


class Corpus:
    """A seeded memory: files written under `root`, plus the facts the queries are built from."""

    def __init__(self, root: Path, n_docs: int, seed: int = 12):
        self.root = root
        self.rng = random.Random(seed)
        n_hosts = max(10, n_docs // 10)
        self.hosts = [f"{self.rng.choice(['pg', 'web', 'cache', 'mq', 'lb', 'db'])}{i}" for i in range(n_hosts)]
        self.flags = [f"--{self.rng.choice(WORDS)}-{self.rng.choice(WORDS)}-{i}" for i in range(max(50, n_docs // 4))]
        self.errors = [f"ERR_{self.rng.choice(WORDS).upper()}_{i}" for i in range(max(50, n_docs // 4))]
        self.files: list[str] = []
        self.journal_dates: list[str] = []
        kinds = ["journal"] * 11 + ["runbook"] * 4 + ["lesson"] * 3
        self.rng.shuffle(kinds)
        day = 0
        for i in range(n_docs):
            kind = "host" if i < len(self.hosts) else kinds[i % len(kinds)]   # one record per host first
            if kind == "journal":
                rel, text = self._journal(day)
                day += 1
            elif kind == "host":
                rel, text = self._host(self.hosts[i])
            elif kind == "runbook":
                rel, text = self._runbook(i)
            else:
                rel, text = self._lesson(i)
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
            self.files.append(rel)

    def sentence(self, ident: bool = False) -> str:
        r = self.rng
        words = [r.choice(WORDS if r.random() < 0.6 else FILLER) for _ in range(r.randint(8, 16))]
        if ident:
            words.insert(r.randrange(len(words)), r.choice([
                f"`{r.choice(self.flags)}`", f"`{r.choice(self.errors)}`", r.choice(self.hosts),
                f"`rate({r.choice(SERVICES)}_requests_total[5m])`", f"[[{r.choice(self.hosts)}]]",
                f"`max_{r.choice(WORDS)} = {r.randint(1, 900)}`"]))
        return " ".join(words).capitalize() + "."

    def paragraph(self) -> str:
        return " ".join(self.sentence(ident=self.rng.random() < 0.5) for _ in range(self.rng.randint(3, 6)))

    def _journal(self, day: int) -> tuple[str, str]:
        import datetime as dt

        d = (dt.date(2020, 1, 1) + dt.timedelta(days=day)).isoformat()
        self.journal_dates.append(d)
        parts = [f"# {d}\n"]
        for h in sorted(self.rng.sample(range(7, 20), self.rng.randint(3, 6))):
            parts.append(f"## {h:02d}:{self.rng.randint(0, 59):02d} {self.rng.choice(WORDS)} on {self.rng.choice(self.hosts)}\n\n"
                         f"{self.paragraph()}\n")
        return f"journal/{d[:4]}/{d}.md", "\n".join(parts)

    def _host(self, name: str) -> tuple[str, str]:
        ip = f"10.{self.rng.randint(0, 255)}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"
        fm = f"---\nhost: {name}\naliases: [{name}.internal]\nips: [{ip}]\ntags: [{self.rng.choice(SERVICES)}]\n---\n"
        body = [f"# {name}\n\n{self.paragraph()}\n"]
        for title in ("Services", "Backups", "Access", "Known issues"):
            body.append(f"## {title}\n\n{self.paragraph()}\n")
        return f"hosts/{name}.md", fm + "\n" + "\n".join(body)

    def _runbook(self, i: int) -> tuple[str, str]:
        svc, verb = self.rng.choice(SERVICES), self.rng.choice(VERBS)
        body = [f"# {verb.replace('-', ' ').capitalize()} {svc}\n\n{self.paragraph()}\n"]
        for step in ("Before you start", "Steps", "Verify", "Rollback"):
            body.append(f"## {step}\n\n{self.paragraph()}\n")
        return f"runbooks/{svc}/{verb}-{i}.md", "\n".join(body)

    def _lesson(self, i: int) -> tuple[str, str]:
        topic = " ".join(self.rng.sample(WORDS, 3))
        body = [f"# {topic.capitalize()}\n\n{self.paragraph()}\n"]
        for title in ("What happened", "Why", "What to do instead", "See also"):
            body.append(f"## {title}\n\n{self.paragraph()}\n")
        return f"memory/lesson-{i}-{topic.replace(' ', '-')}.md", "\n".join(body)

    # -- the questions asked of it ------------------------------------------------------------
    def long_question(self, r: random.Random) -> str:
        """A question as an agent pastes one: a paragraph of context, the corpus's words among everyday ones."""
        return (f"we had a problem last week where the {r.choice(WORDS)} on {r.choice(self.hosts)} kept failing after "
                f"the {r.choice(WORDS)} {r.choice(WORDS)} and nobody could remember how we got it working the previous "
                f"time, so what was the procedure for the {r.choice(WORDS)} and the {r.choice(WORDS)}, what should we "
                f"check first, and is there anything about the {r.choice(SERVICES)} {r.choice(WORDS)} we should know "
                f"before we try it again tomorrow morning")

    def requests(self, n: int) -> dict[str, list[tuple[str, dict]]]:
        r = random.Random(99)
        since = self.journal_dates[int(len(self.journal_dates) * 0.8)] if self.journal_dates else "2020-01-01"
        types = ["journal", "runbook", "lesson", "host"]
        return {
            "filters-only (type+since)": [("search", {"type": types[i % 4], "since": since, "limit": 5}) for i in range(n)],
            "exact": [("search", {"query": r.choice(self.flags + self.errors), "exact": True}) for _ in range(n)],
            "identifier question": [("search", {"query": f"what does {r.choice(self.flags)} do on {r.choice(self.hosts)}"})
                                    for _ in range(n)],
            "paraphrase": [("search", {"query": f"how to {r.choice(WORDS)} the {r.choice(WORDS)} after a {r.choice(WORDS)}"})
                           for _ in range(n)],
            "latest": [("latest", {"terms": [r.choice(self.errors)], "verify_commits": False}) for _ in range(n)],
            "history": [("history", {"entity": r.choice(self.hosts), "verify_commits": False}) for _ in range(n)],
            # Everyday words the corpus lacks, some inside its words ("time" in "timeout"): abstention asks
            # whether the corpus uses each one (issue 27: 194 / 532 ms through MCP at 10,000 documents).
            "paraphrase, common words": [("search", {"query": f"what did we do about the {r.choice(VAGUE)} with the "
                                                              f"{r.choice(VAGUE)} last {r.choice(['time', 'week', 'month'])}"})
                                         for _ in range(n)],
            "long question": [("search", {"query": self.long_question(r)}) for _ in range(n)],
        }


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def pstats(ms: list[float]) -> tuple[float, float]:
    return percentile(ms, 50), percentile(ms, 95)


def edit(path: Path, word: str) -> None:
    """An atomic save (temp file + rename, as editors do) appending one line with `word`."""
    text = path.read_text(encoding="utf-8") + f"\nEdited: {word} recorded here.\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class SyntheticPassages:
    """The packaged model with synthetic passage vectors (`--synthetic-vectors`): its contract, its
    query embedding, but each passage gets a unit vector seeded by its text (same count, dimension
    and duplicates as real ones), so an index of 100k sections is built in minutes, not hours. The
    daemon measured afterwards loads the real model and embeds its queries and edits for real."""

    def __init__(self, real):
        self.real = real

    def embed_passages(self, texts):
        import hashlib

        import numpy as np

        out = np.empty((len(texts), self.real.contract.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.real.contract.dim)
            out[i] = v / np.linalg.norm(v)
        return out

    def __getattr__(self, name):
        return getattr(self.real, name)


# -- in-process -----------------------------------------------------------------------------------

def in_process(corpus: Corpus, config, embedder, args) -> dict:
    from remembrancer.daemon.heap import settle_heap
    from remembrancer.indexer import api
    from remembrancer.indexer.engine import Engine

    out: dict[str, object] = {}
    e = Engine(config, embedder=embedder)
    t0, c0 = time.perf_counter(), time.process_time()
    rep = e.refresh()
    full, cpu = time.perf_counter() - t0, time.process_time() - c0
    counts = e.catalog.counts()
    out["documents"], out["sections"] = counts["documents"], counts["sections"]
    out["full index s"] = round(full, 2)
    out["full index ms/doc"] = round(full * 1000 / max(counts["documents"], 1), 3)
    out["full index CPU ms/doc"] = round(cpu * 1000 / max(counts["documents"], 1), 3)
    out["embedded"] = rep.embedded
    rng = random.Random(5)

    def timed(name: str, calls) -> None:
        """p50/p95 of wall and CPU milliseconds (CPU says what the work costs on a shared machine)."""
        wall, cpu = [], []
        for call in calls:
            t0, c0 = time.perf_counter(), time.process_time()
            call()
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        out[f"{name} ms"] = pstats(wall)
        out[f"{name} CPU ms"] = pstats(cpu)

    def edited(i: int, tag: str) -> str:
        rel = rng.choice(corpus.files)
        edit(corpus.root / rel, f"zq{tag}{i}x")
        return str(corpus.root / rel)

    timed("edit → refresh()", ((lambda i=i: (edited(i, "full"), e.refresh())) for i in range(args.edits)))
    if hasattr(e, "refresh_paths"):
        timed("edit → refresh_paths()", ((lambda i=i: e.refresh_paths([edited(i, "target")])) for i in range(args.edits)))
    timed("refresh, nothing changed", (e.refresh for _ in range(max(3, args.edits // 4))))
    # what an edit pays once the keyword index holds KEYWORD_DEAD_SHARE of deleted documents
    timed("keyword index made again", [lambda: e.core.fulltext.rebuild(e.catalog.all_chunks(), e.catalog.generation)])
    # … and once the vector graph holds VECTOR_DEAD_SHARE of deleted vectors (searches go on meanwhile)
    timed("vector graph made again", [lambda: e.core.vectors.rebuild(*e.catalog.passage_vectors(), e.catalog.generation)])
    fresh = lambda view: Freshness("fresh")  # noqa: E731
    settle_heap()   # as the daemon does after a full pass (daemon/heap.py): searches are timed as it answers them
    for kind, reqs in corpus.requests(args.queries).items():
        api.dispatch_read(e, reqs[0][0], reqs[0][1], fresh)  # warm caches once
        timed(f"in-process {kind}", ((lambda m=m, p=p: api.dispatch_read(e, m, p, fresh)) for m, p in reqs))
    e.close()
    return out


def synthetic_index(config, embedder) -> dict:
    """`--synthetic-vectors`: only the full index (the in-process timings would not be the model's)."""
    from remembrancer.indexer.engine import Engine

    e = Engine(config, embedder=embedder)
    t0, c0 = time.perf_counter(), time.process_time()
    rep = e.refresh()
    counts = e.catalog.counts()
    out = {"documents": counts["documents"], "sections": counts["sections"], "passages": counts.get("passages"),
           "vectors (synthetic)": rep.embedded, "full index s (synthetic vectors)": round(time.perf_counter() - t0, 1),
           "full index CPU s (synthetic vectors)": round(time.process_time() - c0, 1)}
    e.close()
    return out


# -- through the daemon and MCP -------------------------------------------------------------------

def start_daemon(corpus: Corpus, env: dict, code: Path):
    """A daemon run from the package in `code` (this checkout, or `--against`'s), serving the index
    built in-process once it is fresh: (process, client)."""
    from remembrancer.wire import Client

    sock = Path(env["REMEMBRANCER_SOCKET"])
    log = open(Path(env["REMEMBRANCER_DATA_DIR"]).parent / "daemon.log", "a")
    proc = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--root", str(corpus.root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=log, cwd=str(code))
    while not sock.exists():
        if proc.poll() is not None:
            raise RuntimeError("daemon exited; see daemon.log")
        time.sleep(0.05)
    c = Client(sock, timeout=120)
    while True:
        st = c.call("status")
        if st["freshness"]["verdict"] == "fresh" and not st["daemon"]["ingesting"] and st["documents"]:
            return proc, c
        time.sleep(0.2)


def stop_daemon(proc, c) -> None:
    c.call("stop")
    proc.wait(timeout=30)


def through_daemon(corpus: Corpus, env: dict, args) -> dict:
    out: dict[str, object] = {}
    t0 = time.perf_counter()
    proc, c = start_daemon(corpus, env, PROJECT)
    try:
        out["daemon start → fresh s (index built in-process)"] = round(time.perf_counter() - t0, 1)
        rng = random.Random(7)
        times = []
        for i in range(args.edits):
            rel = rng.choice(corpus.files)
            word = f"zqdaemon{i}x"
            t0 = time.perf_counter()
            edit(corpus.root / rel, word)
            while True:
                if c.call("search", query=word, exact=True, limit=1)["results"]:
                    break
                if time.perf_counter() - t0 > 60:
                    raise TimeoutError(word)
                time.sleep(0.01)
            times.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.4)   # let the watcher's queue go quiet: one edit at a time
        out["daemon edit → searchable ms"] = pstats(times)
        time.sleep(3)
        out["daemon RSS MB"] = round(rss_mb(proc.pid), 0)
        c0 = cpu_seconds(proc.pid)
        time.sleep(args.idle)
        out["daemon idle CPU %"] = round(100 * (cpu_seconds(proc.pid) - c0) / args.idle, 2)
        if not args.no_mcp:
            sides = [("", env, PROJECT)]
            other = None
            try:
                if args.against:
                    other_env, code = against_env(env, args)
                    other = start_daemon(corpus, other_env, code)
                    sides.append((" [against]", other_env, code))
                out.update(asyncio.run(mcp_kinds(corpus, sides, args)))
            finally:
                if other is not None:
                    stop_daemon(*other)
            time.sleep(3)
            out["daemon RSS after the MCP searches MB"] = round(rss_mb(proc.pid), 0)
            c0 = cpu_seconds(proc.pid)
            time.sleep(args.idle)
            out["daemon idle CPU % after searches"] = round(100 * (cpu_seconds(proc.pid) - c0) / args.idle, 2)
        out["daemon peak RSS MB"] = round(peak_rss_mb(proc.pid), 0)
        stop_daemon(proc, c)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
    return out


def against_env(env: dict, args) -> tuple[dict, Path]:
    """`--against DIR`: the environment of a second daemon and MCP server running DIR's code, on a
    copy of the index built in-process (made before this checkout's daemon opened it) and a socket
    of their own."""
    tmp = Path(env["REMEMBRANCER_DATA_DIR"]).parent
    code = Path(args.against).resolve()
    return {**env, "PYTHONPATH": str(code), "REMEMBRANCER_DATA_DIR": str(tmp / "data-against"),
            "REMEMBRANCER_SOCKET": str(tmp / "run-against" / "d.sock")}, code


async def mcp_kinds(corpus: Corpus, sides: list[tuple[str, dict, Path]], args) -> dict:
    """Every search kind through the real MCP stdio client, p50/p95 per side: (label, environment,
    code) — this checkout, and `--against`'s beside it, each request asked of both in turn (which
    goes first alternates), so a change in the machine's load falls on both."""
    from contextlib import AsyncExitStack

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    out = {}
    async with AsyncExitStack() as stack:
        sessions = []
        for _, env, code in sides:
            params = StdioServerParameters(command=sys.executable, env=env, cwd=str(code),
                                           args=["-m", "remembrancer", "mcp", "--root", str(corpus.root)])
            r, w = await stack.enter_async_context(stdio_client(params))
            s = await stack.enter_async_context(ClientSession(r, w))
            await s.initialize()
            sessions.append(s)
        for kind, reqs in corpus.requests(args.queries).items():
            times: list[list[float]] = [[] for _ in sides]
            for i, (method, p) in enumerate(reqs[:1] + reqs):   # the first one warms up, untimed
                p = {k: v for k, v in p.items() if k != "verify_commits"}   # not MCP parameters
                if method == "search":
                    p.setdefault("query", "")
                order = list(range(len(sides)))
                for side in order[::-1] if i % 2 else order:
                    t0 = time.perf_counter()
                    res = await sessions[side].call_tool(method, p)
                    times[side].append((time.perf_counter() - t0) * 1000)
                    if res.is_error:
                        raise RuntimeError(f"MCP {method} {p}: {res.content}")
            for (label, _, _), t in zip(sides, times):
                out[f"MCP {kind} ms{label}"] = pstats(t[1:])
    return out


# -- driver ---------------------------------------------------------------------------------------

def one_size(n: int, args, tiny_dir: Path | None) -> dict:
    from remembrancer.indexer.config import Config, make_roots
    from remembrancer.indexer.models.embed import load_embedder

    tmp = Path(tempfile.mkdtemp(prefix=f"remembrancer-scale-{n}-"))
    root = tmp / "memory"
    root.mkdir()
    t0 = time.perf_counter()
    corpus = Corpus(root, n, seed=args.seed)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-qm", "import")
    print(f"[{n}] corpus generated in {time.perf_counter() - t0:.1f}s under {root}", file=sys.stderr)
    model = None if args.real_model else str(tiny_dir)
    # The daemon serves the index the in-process phase built (one full index per size, not two)
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "data"), "REMEMBRANCER_SOCKET": str(tmp / "run" / "d.sock"),
           "REMEMBRANCER_CONFIG": str(tmp / "config.toml")}
    (tmp / "config.toml").write_text(f"[model]\npath = {json.dumps(model)}\n" if model else "")
    os.environ["REMEMBRANCER_DATA_DIR"] = env["REMEMBRANCER_DATA_DIR"]
    cfg = Config(roots=make_roots([root]), model=model)
    embedder = load_embedder(model)
    res = {"docs": n}
    if args.synthetic_vectors:
        res.update(synthetic_index(cfg, SyntheticPassages(embedder)))
    else:
        res.update(in_process(corpus, cfg, embedder, args))
    print(f"[{n}] in-process done", file=sys.stderr)
    if not args.no_daemon:
        if args.against and not args.no_mcp:
            shutil.copytree(env["REMEMBRANCER_DATA_DIR"], against_env(env, args)[0]["REMEMBRANCER_DATA_DIR"])
        res.update(through_daemon(corpus, env, args))
    print(f"[{n}] {json.dumps(res)}", file=sys.stderr)
    if not args.keep:
        subprocess.run(["rm", "-rf", str(tmp)])
    return res


def fmt(v) -> str:
    if isinstance(v, (tuple, list)):
        return f"{v[0]:.1f} / {v[1]:.1f}"
    return f"{v}"


def ratio(a, b) -> str:
    x, y = (a[1], b[1]) if isinstance(a, (tuple, list)) else (a, b)   # p95 for timings
    if not isinstance(x, (int, float)) or not isinstance(y, (int, float)) or not x:
        return "–"
    return f"×{y / x:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000", help="documents per corpus, comma-separated (e.g. 1000,5000,20000)")
    ap.add_argument("--real-model", action="store_true", help="the packaged default model instead of the tiny one")
    ap.add_argument("--edits", type=int, default=20, help="edits timed per measure")
    ap.add_argument("--queries", type=int, default=20, help="requests timed per search kind")
    ap.add_argument("--idle", type=float, default=20.0, help="seconds of idle CPU measured")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--synthetic-vectors", action="store_true",
                    help="with --real-model: build the index with the real model's contract and seeded synthetic "
                         "passage vectors, then measure the daemon (RSS, idle CPU, MCP) with the real model loaded")
    ap.add_argument("--no-daemon", action="store_true", help="in-process figures only")
    ap.add_argument("--no-mcp", action="store_true", help="skip the MCP stdio round trips")
    ap.add_argument("--keep", action="store_true", help="keep the temp corpora and indexes")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--against", metavar="DIR", help="another version's package (as bench_search_latency.py "
                    "--against: `git archive` of indexer, daemon, cli, mcp_server, hooks, systemd under DIR/remembrancer, "
                    "plus remembrancer/): a daemon and MCP server of its own, on a copy of the index, answer every "
                    "MCP request too, in turn with this checkout's, as rows marked [against]")
    args = ap.parse_args()
    if args.synthetic_vectors and not args.real_model:
        ap.error("--synthetic-vectors goes with --real-model (the tiny model's vectors are already cheap)")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    tiny_dir = None
    if not args.real_model:
        from tests.support.tiny_model import build_tiny_model

        tiny_dir = build_tiny_model(Path(tempfile.mkdtemp(prefix="remembrancer-tiny-")))
    results = [one_size(n, args, tiny_dir) for n in sizes]
    rows = [k for k in results[0] if k != "docs"]
    head = "| what | " + " | ".join(f"{r['docs']} docs ({r['sections']} sections)" for r in results) + " | " \
        + " | ".join(f"growth {results[0]['docs']}→{r['docs']}" for r in results[1:]) + " |"
    print(f"\nmodel: {'default (real)' if args.real_model else 'tiny test model'}; timings p50 / p95 ms")
    print(head)
    print("|" + "---|" * (1 + len(results) + len(results) - 1))
    for k in rows:
        cells = [fmt(r.get(k, "–")) for r in results]
        growth = [ratio(results[0].get(k), r.get(k)) for r in results[1:]]
        print(f"| {k} | " + " | ".join(cells) + (" | " + " | ".join(growth) if growth else "") + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
