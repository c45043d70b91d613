"""Robustness benchmark (issue: hardening): run on demand, never in CI.

    .venv/bin/python bench/bench_robustness.py [--parser 20000] [--mutations 5000] [--queries 5000]
        [--protocol 5000] [--kills 50] [--faults 200] [--clients 16] [--docs 1000] [--big]
        [--saves 2000] [--only parser,queries,...] [--json out.json]

Runs the checks of tests/product/test_hardening.py many more times, on the real stores and a real daemon
process (the tiny test model: this measures robustness, not ranking), and prints:
- parser: inputs tried (hypothesis-generated Markdown in broken encodings, random bytes, and
  mutations of the eval corpora's real files) through decode → redact → parse → chunks → passages;
  crashes (any exception but a named Skip) and broken invariants (sections must tile the document)
- query path: (query, filters) pairs tried through indexer.api.do_search; results vs structured
  errors; other exceptions; slowest answer
- protocol: request lines sent to the daemon's socket (random bytes, random JSON, random params);
  each must get exactly one response and the daemon must keep serving
- crash injection: kill -9 of the daemon at random moments of a reindex (a corpus of --kill-docs
  generated files changed between rounds), restart, and a full check of catalog vs tantivy vs
  hnswlib vs the files; plus in-process faults (a store call raising at a random point) followed by
  recovery in the same engine or a new one. Inconsistencies found, per kind
- churn: one client's search latency on --docs generated documents, settled and with the catalog
  generation moving before every search (as during an ingest); p50/p95 of both and their ratio
- saves: an editor saving one note as you type (--saves refreshes over --docs documents), with the
  vector graph's bound and without it: vectors held, the vector file's size, refresh and search times
- concurrency: --clients connections searching while the daemon reindexes --docs documents; all
  answered? any torn result (a section that belongs to no single version of its document)?
  latency p50/p95/max; a burst of 256 simultaneous connections; the daemon's open fds before/after
- --big: the full-size hostile corpus (a 10 MB line, 100,000 headings) through a real refresh
- adversarial classes (issue 14; generators in tests/support/adversarial.py):
  bombs: YAML alias bombs and a 5 MB front matter beside a normal note, through a real refresh;
  long_lines: one --line-mb MB line of each shape the patterns touch, prepared in the sandbox child
  (seconds, child peak RSS); big_files: --file-mb MB files of memory-heavy shapes (paragraphs,
  lines, headings, list items, fences, quotes, table rows) under the per-document budget;
  special: indexed files swapped for a FIFO, device, socket, folder, outside symlink, over-cap file,
  then read (answered? blocked?); damaged: catalog garbage/truncated/emptied/page zeroed, tantivy
  meta and vector file garbage, then open + refresh (recovered?); latency: another client's search
  p50/p95 on a daemon, settled vs while a --line-mb MB `a-a-a-…` line is ingested, and how long
  SIGTERM takes mid-document
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
from bench.procstat import cpu_seconds, peak_rss_mb  # noqa: E402
from remembrancer.indexer.search.evaluate import percentile  # noqa: E402  (nearest rank, one definition)
EVAL = PROJECT.parent / "shared" / "eval"

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bench import scope_escapes  # noqa: E402
from tests.product import test_hardening as H  # noqa: E402
from tests.support.adversarial import FUZZ_LAYOUT, FUZZ_MATCHER, FUZZ_ROOT  # noqa: E402
from tests.support.corpus import engine_for, write  # noqa: E402
from tests.support.paths import EXAMPLES  # noqa: E402
from tests.support.daemon import DaemonProc, wait_for  # noqa: E402
from tests.support.tiny_model import build_tiny_model  # noqa: E402

FUZZ = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck), print_blob=False)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Tally:
    """Counts outcomes; keeps the first few failures with a reproducer."""

    def __init__(self, name: str, keep_dir: Path):
        self.name = name
        self.counts: dict[str, int] = {}
        self.failures: list[str] = []
        self.keep_dir = keep_dir
        self.slowest = 0.0
        self.slow: list[tuple] = []

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    def fail(self, what: str, data: bytes | str | None = None) -> None:
        self.add("FAILED")
        if len(self.failures) < 10:
            if data is not None:
                self.keep_dir.mkdir(parents=True, exist_ok=True)
                f = self.keep_dir / f"{self.name}-{len(self.failures)}.bin"
                f.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
                what += f" (input kept in {f})"
            self.failures.append(what)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# -- parser ------------------------------------------------------------------------------------

SLOW_S = 2.0   # one document taking longer than this is reported (a stuck ingest starts here)


def _check_bytes(tally: Tally, data: bytes) -> None:
    t = time.perf_counter()
    try:
        tally.add(H.check_document_bytes(data))
    except Exception as e:  # a crash or a broken invariant
        tally.fail(f"{type(e).__name__}: {str(e)[:200]}", data)
    dt = time.perf_counter() - t
    tally.slowest = max(tally.slowest, dt)
    if dt > SLOW_S:
        tally.slow.append((round(dt, 1), len(data), data[:60]))


def _corpus_files() -> list[bytes]:
    files = [p.read_bytes() for p in sorted(EXAMPLES.rglob("*.md"))]
    if (EVAL / "corpora").is_dir():
        files += [p.read_bytes() for p in sorted((EVAL / "corpora").rglob("*.md"))]
    return files


_JUNK = [b"\x00", b"\xff", b"\xfe\xff", b"\xef\xbb\xbf", b"\xc3", b"\xe2\x82", b"\r", b"\r\n", b"\n",
         b"```", b"~~~", b"---\n", b"# ", b"\n#", b"> ", b"- ", b"    ", b"<!--", b"-->", b"|", b"\t",
         b"\xed\xa0\x80", b"\x1b", b"[[", b"]]", b"](", b"\\", b"*", b"_", b"=====\n"]


def mutate(rng: random.Random, files: list[bytes]) -> bytes:
    data = bytearray(rng.choice(files))
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(8)
        pos = rng.randint(0, len(data))
        if op == 0 and data:      # flip bytes
            for _ in range(rng.randint(1, 16)):
                i = rng.randrange(len(data))
                data[i] = rng.randrange(256)
        elif op == 1:             # insert markup or a broken encoding
            data[pos:pos] = rng.choice(_JUNK) * rng.randint(1, 50)
        elif op == 2:             # truncate
            del data[pos:]
        elif op == 3 and data:    # repeat a slice many times (huge lines, many headings)
            a = rng.randrange(len(data))
            piece = data[a:a + rng.randint(1, 80)]
            data[pos:pos] = piece * rng.randint(2, 2000)
        elif op == 4:             # splice another file in
            other = rng.choice(files)
            data[pos:pos] = other[rng.randrange(len(other) + 1):]
        elif op == 5:             # convert line endings
            data = bytearray(bytes(data).replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\n"])))
        elif op == 6:             # deep nesting
            data[pos:pos] = rng.choice([b"  ", b">", b"- ", b"1. "]) * rng.randint(50, 3000) + b"x\n"
        else:                     # drop a slice
            del data[pos:pos + rng.randint(1, 500)]
    return bytes(data)


def _worker(conn) -> None:
    """A child that checks documents one by one (so a hang can be timed out and killed)."""
    while True:
        data = conn.recv_bytes()
        t = time.perf_counter()
        try:
            out, err = H.check_document_bytes(data), None
        except Exception as e:
            out, err = None, f"{type(e).__name__}: {str(e)[:200]}"
        conn.send((out, err, time.perf_counter() - t))


class Checker:
    """check_document_bytes in a child process with a deadline per document."""

    def __init__(self, timeout: float):
        import multiprocessing

        self.ctx = multiprocessing.get_context("fork")
        self.timeout = timeout
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()

    def check(self, data: bytes) -> tuple[str | None, str | None, float]:
        self.conn.send_bytes(data)
        if self.conn.poll(self.timeout):
            return self.conn.recv()
        self.proc.kill()
        self.proc.join()
        self._start()
        return None, "TIMEOUT", self.timeout

    def close(self) -> None:
        self.proc.kill()
        self.proc.join()


def bench_parser(n: int, n_mut: int, keep: Path, timeout: float) -> dict:
    t0 = time.monotonic()
    gen, rnd, mut = Tally("parser-generated", keep), Tally("parser-binary", keep), Tally("parser-mutated", keep)

    @settings(FUZZ, max_examples=n)
    @given(H.markdown_bytes())
    def generated(data):
        _check_bytes(gen, data)

    @settings(FUZZ, max_examples=max(n // 4, 1))
    @given(st.binary(max_size=20_000))
    def binary(data):
        _check_bytes(rnd, data)

    for fn in (generated, binary):
        try:
            fn()
        except Exception as e:  # only if hypothesis itself gives up
            log(f"hypothesis stopped: {e}")
    # Mutated real files can be large (a slice repeated 2,000 times): each runs in a child with a
    # deadline, so an input that would stall an ingest is counted (and kept) instead of stalling this.
    rng = random.Random(1)
    files = _corpus_files()
    checker = Checker(timeout)
    hangs, slow_kept = [], []
    try:
        for i in range(n_mut):
            data = mutate(rng, files)
            out, err, dt = checker.check(data)
            mut.slowest = max(mut.slowest, dt)
            if err == "TIMEOUT":
                mut.add("TIMEOUT")
                hangs.append(len(data))
                if len(hangs) <= 10:   # kept apart: slow inputs must not take the crashes' reproducer slots
                    keep.mkdir(parents=True, exist_ok=True)
                    f = keep / f"hang-{len(hangs)}.md"
                    f.write_bytes(data)
                    slow_kept.append(f"no answer in {timeout:.0f}s for {len(data):,} bytes (kept in {f})")
            elif err:
                mut.fail(err, data)
            else:
                mut.add(out)
                if dt > SLOW_S:
                    mut.slow.append((round(dt, 1), len(data), data[:60]))
            if i and i % 500 == 0:
                log(f"  parser mutations {i}/{n_mut} ({mut.counts})")
    finally:
        checker.close()
    tallies = [gen, rnd, mut]
    return {"inputs": sum(t.total for t in tallies), "by_source": {t.name: t.counts for t in tallies},
            "crashes_or_broken_invariants": sum(t.counts.get("FAILED", 0) for t in tallies),
            f"no_answer_within_{timeout:.0f}s": mut.counts.get("TIMEOUT", 0), "hang_input_sizes": hangs[:20],
            "failures": [f for t in tallies for f in t.failures], "slow_inputs_kept": slow_kept,
            "corpus_files": len(files),
            "slowest_input_s": round(max(t.slowest for t in tallies), 2),
            f"inputs_over_{SLOW_S:.0f}s": [x for t in tallies for x in t.slow][:10],
            "seconds": round(time.monotonic() - t0, 1)}


# -- query path --------------------------------------------------------------------------------

def bench_queries(n: int, embedder, keep: Path, corpus: Path) -> dict:
    t0 = time.monotonic()
    tally = Tally("query", keep)
    lat: dict[str, list[float]] = {"results": [], "error": []}
    e = engine_for([corpus], embedder)
    e.refresh()

    def one(query, params):
        t = time.perf_counter()
        try:
            outcome = H.check_query(e, query, params)
            tally.add(outcome)
            lat[outcome].append(time.perf_counter() - t)
        except Exception as ex:
            tally.fail(f"{type(ex).__name__}: {str(ex)[:200]} for query={query!r:.80} params={params!r:.200}",
                       json.dumps({"query": query, "params": params}, default=repr))

    @settings(FUZZ, max_examples=n)
    @given(query=H._QUERY)
    def fuzz_text(query):            # any text, no filters: a search runs
        one(query, {})

    @settings(FUZZ, max_examples=n)
    @given(query=H._QUERY, params=H._PARAMS)
    def fuzz(query, params):         # any text with any filter values (mostly invalid)
        one(query, params)

    @settings(FUZZ, max_examples=max(n // 10, 1))
    @given(query=H._JSONISH, params=H._PARAMS)
    def fuzz_types(query, params):   # a query that is not a string at all
        one(query, params)

    for fn in (fuzz_text, fuzz, fuzz_types):
        try:
            fn()
        except Exception as ex:
            log(f"hypothesis stopped: {ex}")
    e.close()
    ms = lambda xs, q: round(percentile(xs, q * 100) * 1000, 1)  # noqa: E731
    return {"inputs": tally.total, "outcomes": tally.counts,
            "other_exceptions": tally.counts.get("FAILED", 0), "failures": tally.failures,
            "latency_ms_results": {"p50": ms(lat["results"], 0.5), "p99": ms(lat["results"], 0.99),
                                   "max": round(max(lat["results"], default=0) * 1000, 1)},
            "latency_ms_errors": {"p50": ms(lat["error"], 0.5), "max": round(max(lat["error"], default=0) * 1000, 1)},
            "seconds": round(time.monotonic() - t0, 1)}


# -- protocol ----------------------------------------------------------------------------------

_PIECES = [b"{", b"}", b"[", b"]", b'"', b":", b",", b"method", b"search", b"params", b"query", b"id",
           b"\\u0000", b"\\ud800", b"\xff", b"\x00", b"1e999", b"-", b"null", b"true", b"status", b" ",
           b"\\", b"\\n", b"read", b"path", b"../", b"limit", b"NaN", b"\xc3"]
_STRINGS = ["restore", "pgBackRest", "", " ", "\x00", "\ud800", "\udfff x", "../../etc/passwd", "/etc/passwd",
            "hosts/db1.md", "journal", "2030-01-21", "bad-date", "a" * 5000, "🙂", "%", "*", "rate(x[5m])"]
_METHODS = ["search", "read", "outline", "list", "status", "nope", "", 5, None]


def _rand_value(rng: random.Random, depth=0):
    r = rng.random()
    if depth < 3 and r < 0.1:
        return [_rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and r < 0.15:
        return {rng.choice(["query", "x", "\ud800"]): _rand_value(rng, depth + 1)}
    if r < 0.6:
        return rng.choice(_STRINGS)
    return rng.choice([0, -1, 1, 5, 51, 10**30, 1.5, True, False, None])


def random_line(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.3:
        line = b"".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 60)))
    elif kind < 0.4:
        line = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    else:
        params = {k: _rand_value(rng) for k in rng.sample(["query", "limit", "type", "path", "tags", "since",
                                                           "until", "exact", "explain", "budget_tokens",
                                                           "heading", "lines", "offset", "max_chars", "outline",
                                                           "scope"], rng.randint(0, 5))}
        req = {"id": _rand_value(rng), "method": rng.choice(_METHODS), "params": params}
        if rng.random() < 0.1:
            req["params"] = _rand_value(rng)
        line = json.dumps(req).encode()
    return line.replace(b"\n", b"")


def bench_protocol(n: int, tmp: Path, model: Path, notes: Path) -> dict:
    t0 = time.monotonic()
    d = H.TimeoutDaemon(tmp, [notes], model, idle_s=30.0, request_s=30.0).start()
    codes: dict[str, int] = {}
    missing, broken, internal = 0, [], []
    rng = random.Random(2)
    try:
        s = H.raw(d.sock, timeout=60)
        for i in range(n):
            line = random_line(rng)
            try:
                s.sendall(line + b"\n")
                out, _ = H.read_lines(s, 1, timeout=60)
            except OSError as e:
                out = []
                broken.append(f"{type(e).__name__}: {e}")
            if not out:
                missing += 1
                broken.append(f"no response to {line[:80]!r}")
                s.close()
                s = H.raw(d.sock, timeout=60)
                continue
            r = out[0]
            key = "ok" if r.get("ok") else r.get("error", {}).get("code", "?")
            codes[key] = codes.get(key, 0) + 1
            if key == "internal" and len(internal) < 8:   # an exception the code did not expect
                internal.append(f"{line[:160]!r} → {r['error']['message'][:120]}")
            if i and i % 1000 == 0:
                log(f"  protocol {i}/{n}")
        s.close()
        alive = bool(d.call("status")["documents"])
    finally:
        d.stop()
    return {"lines": n, "responses_by_code": codes, "lines_without_exactly_one_response": missing,
            "problems": broken[:10], "internal_error_samples": internal, "daemon_alive_after": alive,
            "seconds": round(time.monotonic() - t0, 1)}


# -- crash injection ---------------------------------------------------------------------------

def bench_kills(n: int, n_docs: int, tmp: Path, model: Path) -> dict:
    t0 = time.monotonic()
    corpus = H.VersionedCorpus(tmp / "corpus", n_docs, seed=11)
    d = DaemonProc(tmp, [corpus.root], model)
    index_dir = H.index_dir_for(tmp / "data", [corpus.root])
    t = time.monotonic()
    d.start()                      # calibrate: start → fresh over the whole corpus
    full = time.monotonic() - t
    d.stop()
    rng = random.Random(5)
    inconsistencies, rounds, during = [], 0, 0
    for i in range(n):
        try:
            r = H.crash_round(d, corpus, rng, index_dir, max_delay=full * 1.2)
        except Exception as e:  # the daemon did not come back fresh: that is a failure too
            r = {"problems": [f"round failed: {type(e).__name__}: {e}"], "killed_while_ingesting": False,
                 "delay": None}
            d.stop()
        rounds += 1
        during += r["killed_while_ingesting"]
        if r["problems"]:
            inconsistencies.append({"round": i, "delay": r["delay"], "problems": r["problems"][:5]})
        log(f"  kill -9 round {i + 1}/{n}: at {r['delay']}s, ingesting={r['killed_while_ingesting']}, "
            f"problems={len(r['problems'])}")
    return {"iterations": rounds, "killed_while_ingesting": during, "rounds_with_inconsistencies": len(inconsistencies),
            "inconsistencies": inconsistencies[:10], "documents": n_docs,
            "full_index_seconds": round(full, 1), "seconds": round(time.monotonic() - t0, 1)}


def bench_faults(n: int, embedder, tmp: Path) -> dict:
    t0 = time.monotonic()
    root = tmp / "faults"
    corpus = H.VersionedCorpus(root, 60, seed=1)
    engine_for([root], embedder).refresh()
    rng = random.Random(9)
    fired, bad, points = 0, [], {}
    for i in range(n):
        r = H.fault_round(root, corpus, embedder, rng, fresh_engine=bool(i % 2))
        fired += r["fired"]
        name = r["point"].split("#")[0]
        points[name] = points.get(name, 0) + r["fired"]
        if r["problems"]:
            bad.append(r)
    return {"rounds": n, "faults_fired": fired, "fired_per_store_call": points,
            "rounds_with_inconsistencies": len(bad), "inconsistencies": bad[:10],
            "seconds": round(time.monotonic() - t0, 1)}


# -- search under churn ------------------------------------------------------------------------

def bench_churn(n_docs: int, embedder, tmp: Path, n_searches: int = 200) -> dict:
    """One client, in process: search latency on a settled index, then with the catalog generation
    moving before every search — as during an ingest, which commits one document at a time and so
    invalidates every per-generation cache. The ratio is what the churn costs a search."""
    from remembrancer.indexer.api import do_search

    root = tmp / "corpus"
    for i in range(n_docs):
        write(root, H.doc_path(i), H.doc_text(i, 1))
    e = engine_for([root], embedder)
    e.refresh()
    rng = random.Random(3)

    def run(churn: bool) -> list[float]:
        lat = []
        for _ in range(n_searches):
            if churn:
                e.catalog.set_meta("generation", str(e.catalog.generation + 1))
            i = rng.randrange(n_docs)
            q = rng.choice([f"Doc {i} part {rng.randrange(4)}", f"topic{rng.randrange(17)} item{rng.randrange(3)}",
                            f"paragraph document {i}", "kind1 intro"])
            t0 = time.perf_counter()
            do_search(e.view(), {"query": q, "limit": 5})
            lat.append((time.perf_counter() - t0) * 1000)
        return lat

    try:
        run(False)   # warm: model session, caches
        steady, churn = run(False), run(True)
    finally:
        e.close()
    p = {name: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1)}
         for name, v in (("steady", steady), ("generation_moving", churn))}
    return {"documents": n_docs, "searches_each": n_searches, "latency_ms": p,
            "ratio_p50": round(p["generation_moving"]["p50"] / max(p["steady"]["p50"], 0.01), 2)}


# -- saves as you type ---------------------------------------------------------------------------

def bench_saves(n_docs: int, n_saves: int, embedder, tmp: Path) -> dict:
    """An editor that saves as you type: one note's last paragraph rewritten and refreshed n_saves
    times over n_docs documents. Each save re-embeds that paragraph; hnswlib only marks the old vector
    deleted. Run twice in one go — with the shipped bound (writer.VECTOR_DEAD_SHARE: the graph made
    again from the catalog's vectors past it) and without it (the baseline) — and say what the graph
    holds (at the end and at most), the vector file's size, a refresh's p50 and slowest (a rebuild's
    cost) and a search's p50 at the end."""
    from remembrancer.indexer.api import do_search
    from remembrancer.indexer.engine import writer

    out, shipped = {}, writer.VECTOR_DEAD_SHARE
    for name, share in (("bounded", shipped), ("unbounded", float("inf"))):
        root = tmp / name / "corpus"
        for i in range(n_docs):
            write(root, H.doc_path(i), H.doc_text(i, 1))
        os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / name / "data")
        writer.VECTOR_DEAD_SHARE = share
        e = engine_for([root], embedder)
        try:
            e.refresh()
            note = root / H.doc_path(0)
            head = note.read_text()
            refresh, held_most = [], 0
            for k in range(n_saves):
                note.write_text(f"{head}\nDraft {k}: the failover drill ran in {k % 60} minutes, replica {k} lagged.\n")
                t0 = time.perf_counter()
                e.refresh()
                refresh.append((time.perf_counter() - t0) * 1000)
                held_most = max(held_most, e.core.vectors.index.get_current_count())
            lat = []
            for k in range(100):
                t0 = time.perf_counter()
                do_search(e.view(), {"query": f"paragraph document {k % n_docs}", "limit": 5})
                lat.append((time.perf_counter() - t0) * 1000)
            v = e.core.vectors
            out[name] = {"live": len(v.live), "held": v.index.get_current_count(), "held_most": held_most,
                         "file_kb": round(v.file.stat().st_size / 1024),
                         "refresh_ms_p50": round(percentile(refresh, 50), 1), "refresh_ms_max": round(max(refresh), 1),
                         "search_p50_ms": round(percentile(lat, 50), 2)}
        finally:
            e.close()
            writer.VECTOR_DEAD_SHARE = shipped
    b, u = out["bounded"], out["unbounded"]
    return {"documents": n_docs, "saves": n_saves, **out,
            "held_ratio_unbounded_over_bounded": round(u["held"] / max(b["held"], 1), 2),
            "file_ratio": round(u["file_kb"] / max(b["file_kb"], 1), 2)}


# -- concurrency -------------------------------------------------------------------------------

def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _fd_kinds(pid: int) -> list:
    kinds: dict[str, int] = {}
    for f in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{f}")
        except OSError:
            continue
        k = target.rsplit("/", 1)[-1] if target.startswith("/") else target.split(":")[0]
        kinds[k] = kinds.get(k, 0) + 1
    return sorted(kinds.items(), key=lambda kv: -kv[1])[:6]


def bench_concurrency(clients: int, n_docs: int, tmp: Path, model: Path) -> dict:
    t0 = time.monotonic()
    root = tmp / "corpus"
    for i in range(n_docs):
        write(root, H.doc_path(i), H.doc_text(i, 1))
    d = DaemonProc(tmp, [root], model).start()
    try:
        fds_before = _fds(d.proc.pid)
        expected = H.expected_sections(range(1, 3), n_docs)
        stop = threading.Event()
        run = H.hammer(d.sock, clients, stop, expected, n_docs, min_each=5)
        time.sleep(1.0)
        for i in range(n_docs):
            write(root, H.doc_path(i), H.doc_text(i, 2))
        d.call("reindex")
        t_reindex = time.monotonic()
        st = d.wait_fresh(1800)
        reindex_s = time.monotonic() - t_reindex
        stop.set()
        for t in run["threads"]:
            t.join(300)
        stats = run["stats"]
        problems = H.check_index(Path(st["index_dir"]), H.corpus_files(root))["problems"]
        # a burst of simultaneous connections, each with one request
        burst = [H.raw(d.sock, timeout=60) for _ in range(256)]
        for s in burst:
            s.sendall(b'{"id": 1, "method": "status"}\n')
        answered = sum(1 for s in burst if H.read_lines(s, 1, timeout=60)[0])
        for s in burst:
            s.close()
        wait_for(lambda: d.call("status")["daemon"]["clients"] <= 1, timeout=30)
        fds_after = _fds(d.proc.pid)
        fd_kinds = _fd_kinds(d.proc.pid)
    finally:
        d.stop()
    lat = stats["latencies"]
    return {"clients": clients, "documents_reindexed": n_docs, "reindex_seconds": round(reindex_s, 1),
            "searches": stats["searches"], "searches_during_reindex": stats["during_ingest"],
            "errors": len(stats["errors"]), "error_samples": stats["errors"][:5],
            "torn_results": len(stats["torn"]), "torn_samples": stats["torn"][:5],
            "latency_ms": {"p50": round(percentile(lat, 50) * 1000, 1), "p95": round(percentile(lat, 95) * 1000, 1),
                           "max": round(max(lat, default=0) * 1000, 1)},
            "stores_consistent_after": not problems, "store_problems": problems[:5],
            "burst_connections": 256, "burst_answered": answered, "daemon_fds_before": fds_before,
            "daemon_fds_after": fds_after, "daemon_fd_kinds_after": fd_kinds,
            "seconds": round(time.monotonic() - t0, 1)}


# -- adversarial classes (issue 14: bombs, long lines, special files, damaged stores) ------------


def bench_bombs(embedder, tmp: Path) -> dict:
    """YAML front matter bombs next to a normal note, through a real refresh."""
    from tests.support.adversarial import billion_laughs, huge_front_matter, merge_key_bomb

    root = tmp / "bombs"
    write(root, "a-laughs.md", billion_laughs())
    write(root, "b-merge.md", merge_key_bomb())
    write(root, "c-huge-front-matter.md", huge_front_matter(5_000_000))
    write(root, "ok.md", "# Normal\n\nA normal note about restoring the database.\n")
    e = engine_for([root], embedder)
    t = time.monotonic()
    report = e.refresh()
    out = {"seconds": round(time.monotonic() - t, 2), "documents": sorted(e.catalog.documents()),
           "largest_front_matter_stored_bytes": max(len(json.dumps(e.catalog.document(p)["front_matter"]))
                                                    for p in e.catalog.documents()),
           "warnings": [w[:120] for w in report.warnings],
           "normal_note_found": bool(do_search_paths(e, "restoring the database") == "ok.md")}
    e.close()
    return out


def do_search_paths(e, q: str) -> str | None:
    from remembrancer.indexer.api import do_search

    res = do_search(e.view(), {"query": q})["results"]
    return res[0]["path"] if res else None


def bench_long_lines(line_mb: float, units: list[str] | None = None) -> dict:
    """Every line shape the patterns touch, `line_mb` MB on one line, through the whole
    decode → redact → parse → chunks → passages pipeline in the sandbox child (as the engine runs a
    large document); seconds and the child's peak RSS per shape."""
    from remembrancer.indexer.ingest import sandbox
    from remembrancer.indexer.ingest.markdown import PLAIN_PART_MARK
    from tests.support.adversarial import LINE_UNITS, pathological_line

    w = sandbox.Worker("bench-long-lines")
    rows = []
    n = int(line_mb * 1_000_000)
    for unit in units or LINE_UNITS:
        data = ("# Long\n\n" + pathological_line(unit, n) + "\n").encode()
        f = H.CorpusFile(FUZZ_ROOT, "long.md", "long.md", FUZZ_ROOT.path / "long.md", len(data), 0)
        t = time.monotonic()
        try:   # as the engine prepares it: Markdown, then plain text in parts past the budget
            prepared = sandbox.prepare_large(w, (f, data, FUZZ_LAYOUT, FUZZ_MATCHER, None, None))
            outcome = "indexed as plain text" if any(PLAIN_PART_MARK in x for x in prepared.warnings) else "indexed"
        except Exception as e:
            outcome = type(e).__name__
        dt = time.monotonic() - t
        rss = peak_rss_mb(w._proc.pid) if w._proc is not None else None
        cpu = cpu_seconds(w._proc.pid) if w._proc is not None else None
        rows.append({"unit": unit, "seconds": round(dt, 2), "child_cpu_s": cpu, "child_peak_rss_mb": rss,
                     "outcome": outcome, "load": round(os.getloadavg()[0], 1)})
        w.close()   # a fresh child per shape: its peak is this shape's
        log(f"  {unit!r}: {dt:.1f}s ({cpu} CPU-s, load {os.getloadavg()[0]:.1f}) rss {rss} MB {outcome}")
    worst = max(rows, key=lambda r: r["seconds"])
    cpus = sorted(r["child_cpu_s"] or 0 for r in rows)
    return {"line_bytes": n, "shapes": len(rows), "slowest": worst, "median_cpu_s": cpus[len(cpus) // 2],
            "over_10s": [r for r in rows if r["seconds"] > 10],
            "over_10_cpu_s": [r for r in rows if (r["child_cpu_s"] or 0) > 10], "max_child_rss_mb": max(r["child_peak_rss_mb"] or 0 for r in rows),
            "rows": rows}


def bench_big_files(tmp: Path, file_mb: float) -> dict:
    """Files just under the size cap whose shape costs memory (many paragraphs, headings, list items,
    fences, one line), prepared as the engine prepares them: in the sandbox child, under the product's
    per-document budget. Seconds, outcome, and the child's peak RSS (sampled while it works, so a
    child killed at the budget is measured too)."""
    from remembrancer.indexer.ingest import sandbox
    from remembrancer.indexer.ingest.markdown import PLAIN_PART_MARK

    n = int(file_mb * 1_000_000)
    shapes = {"paragraphs": "a\n\n", "lines": "a\n", "headings": "# h\n", "list_items": "- a\n",
              "fences": "```\nx\n```\n", "quotes": "> a\n", "table_rows": "| a | b |\n", "one_line": "word "}
    rows = []
    for name, unit in shapes.items():
        data = (unit * (n // len(unit))).encode()
        f = H.CorpusFile(FUZZ_ROOT, "big.md", "big.md", FUZZ_ROOT.path / "big.md", len(data), 0)
        w = sandbox.Worker("bench-big-files")
        peak = [0.0]
        done = threading.Event()

        def sample():
            while not done.wait(0.2):
                proc = w._proc
                try:
                    peak[0] = max(peak[0], peak_rss_mb(proc.pid)) if proc is not None else peak[0]
                except (OSError, ValueError):
                    pass

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t = time.monotonic()
        try:
            prepared = sandbox.prepare_large(w, (f, data, FUZZ_LAYOUT, FUZZ_MATCHER, None, None))
            plain = any(PLAIN_PART_MARK in x for x in prepared.warnings)
            outcome = (f"indexed as plain text ({len(prepared.sections)} parts, {len(prepared.texts)} passages)"
                       if plain else f"indexed ({len(prepared.sections)} sections, {len(prepared.texts)} passages)")
        except sandbox.OverBudget:
            outcome = f"over both {sandbox.BUDGET_S:.0f} CPU-s budgets: indexed without text"
        except Exception as e:
            outcome = type(e).__name__
        dt = time.monotonic() - t
        if w._proc is not None:
            peak[0] = max(peak[0], peak_rss_mb(w._proc.pid))
        done.set()
        sampler.join()
        w.close()
        rows.append({"shape": name, "bytes": len(data), "seconds": round(dt, 1), "child_peak_rss_mb": peak[0],
                     "outcome": outcome})
        log(f"  {name}: {dt:.1f}s rss {peak[0]} MB {outcome}")
    return {"file_bytes": n, "budget_s": sandbox.BUDGET_S, "rows": rows,
            "max_child_rss_mb": max(r["child_peak_rss_mb"] or 0 for r in rows)}


def bench_special_files(embedder, tmp: Path) -> dict:
    """Indexed files swapped for a FIFO, a device, a socket, a folder, a symlink out of the root;
    each read must answer (an error) without blocking."""
    import socket as socketlib

    from remembrancer.indexer.search import reader
    from remembrancer.indexer.errors import UserError

    root = tmp / "special"
    kinds = ["fifo", "char_device", "socket", "directory", "symlink_out", "grown_over_cap"]
    for k in kinds:
        write(root, f"{k}.md", f"# {k}\n\nindexed as a regular file\n")
    e = engine_for([root], embedder)
    e.refresh()
    outcomes = {}
    for k in kinds:
        p = root / f"{k}.md"
        p.unlink()
        if k == "fifo":
            os.mkfifo(p)
        elif k == "char_device":
            try:
                os.mknod(p, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 5))   # /dev/zero
            except PermissionError:
                os.symlink("/dev/zero", p)
        elif k == "socket":
            s = socketlib.socket(socketlib.AF_UNIX)
            s.bind(str(p))
        elif k == "directory":
            p.mkdir()
        elif k == "symlink_out":
            os.symlink("/etc/hostname", p)
        else:
            p.write_bytes(b"# big\n" + b"x" * (e.config.max_file_bytes + 10))
        box: dict = {}

        def run():
            try:
                reader.read(e.view(), f"{k}.md")
                box["out"] = "read (unexpected)"
            except UserError as err:
                box["out"] = f"{err.code}: {err.message[:80]}"
            except Exception as err:
                box["out"] = f"CRASH {type(err).__name__}: {err}"

        t = threading.Thread(target=run, daemon=True)
        t0 = time.monotonic()
        t.start()
        t.join(20)
        outcomes[k] = {"answer": box.get("out", "BLOCKED (no answer in 20 s)"), "ms": round((time.monotonic() - t0) * 1000, 1)}
    refreshed = e.refresh()
    e.close()
    return {"reads": outcomes, "blocked": sum(1 for v in outcomes.values() if v["answer"].startswith("BLOCKED")),
            "reindex_warnings": [w[:100] for w in refreshed.warnings]}


def bench_damaged_stores(embedder, tmp: Path) -> dict:
    """Damage one store at a time (catalog: garbage, truncated, emptied, a page zeroed; full-text
    meta; vector file), then open and refresh: recovered, with every document back?"""
    root = tmp / "damaged-corpus"
    for i in range(40):
        write(root, H.doc_path(i), H.doc_text(i, 1))
    rows = {}
    for how in ("catalog_garbage", "catalog_truncated", "catalog_empty", "catalog_page_zeroed",
                "fulltext_meta_garbage", "vectors_garbage"):
        os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / f"data-{how}")
        e = engine_for([root], embedder)
        e.refresh()
        n = len(e.catalog.documents())
        e.catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        d = e.dir
        e.close()
        cat = d / "catalog.sqlite3"
        if how == "catalog_garbage":
            cat.write_bytes(os.urandom(cat.stat().st_size))
        elif how == "catalog_truncated":
            cat.write_bytes(cat.read_bytes()[: cat.stat().st_size // 2 + 123])
        elif how == "catalog_empty":
            cat.write_bytes(b"")
        elif how == "catalog_page_zeroed":
            data = bytearray(cat.read_bytes())
            data[4096:8192] = bytes(4096)
            cat.write_bytes(bytes(data))
        elif how == "fulltext_meta_garbage":
            (d / "fulltext" / "meta.json").write_text("{garbage")
        else:
            for f in (d / "vectors").glob("*.bin"):
                f.write_bytes(os.urandom(1000))
        t = time.monotonic()
        try:
            e = engine_for([root], embedder)
            rep = e.refresh()
            back = len(e.catalog.documents())
            found = do_search_paths(e, "Doc 3 part 1") is not None
            e.close()
            rows[how] = {"recovered": back == n and found, "documents": f"{back}/{n}", "seconds": round(time.monotonic() - t, 1),
                         "note": next((w[:140] for w in rep.warnings if "damaged" in w), None)}
        except Exception as ex:
            rows[how] = {"recovered": False, "error": f"{type(ex).__name__}: {str(ex)[:160]}"}
        log(f"  {how}: {rows[how]}")
    return rows


def bench_ingest_latency(tmp: Path, model: Path, n_docs: int, line_mb: float, unit: str = "a-",
                         searches: int = 200) -> dict:
    """A daemon serving --docs documents: one client's search latency settled (baseline), then while
    a `line_mb` MB pathological line is ingested; then SIGTERM while it ingests another one."""
    from remembrancer.wire import Client
    from tests.support.adversarial import pathological_line

    root = tmp / "corpus"
    for i in range(n_docs):
        write(root, H.doc_path(i), H.doc_text(i, 1))
    d = DaemonProc(tmp, [root], model).start()
    rng = random.Random(4)

    def one_search(c) -> float:
        t0 = time.perf_counter()
        c.call("search", query=f"Doc {rng.randrange(n_docs)} part {rng.randrange(4)}")
        return (time.perf_counter() - t0) * 1000

    try:
        with Client(d.sock, timeout=120) as c:
            for _ in range(20):
                one_search(c)
            base = [one_search(c) for _ in range(searches)]
            write(root, "z-pathological.md", "# Long\n\n" + pathological_line(unit, int(line_mb * 1_000_000)) + "\n")
            write(root, "z-after.md", "# After\n\nan unrelated edit made while the long line is ingested\n")
            c.call("reindex")
            t0 = time.monotonic()
            during = []
            during_at = []
            saw_ingesting = False
            listed = False
            dropped = 0
            while True:
                try:  # status and list on their own connections: the search client's latency is the figure
                    st = d.call("status")
                    busy = st["daemon"]["ingesting"] or st["daemon"]["queued_changes"]
                    saw_ingesting |= bool(busy)
                    if not busy and time.monotonic() - t0 > 1:
                        listed = "z-pathological.md" in {x["path"] for x in d.call("list", limit=5000)["documents"]}
                        if listed:   # (a save seen half-written is ingested twice: wait for the whole file)
                            break
                    during.append(one_search(c))
                    during_at.append(round(time.monotonic() - t0, 3))
                except Exception:  # a dropped connection is counted, and the client reconnects
                    dropped += 1
                    c.close()   # the next call connects again
                if time.monotonic() - t0 > 600:
                    break
            ingest_s = time.monotonic() - t0
            after_found = [r for r in c.call("search", query="unrelated edit made while", exact=True)["results"]
                           if r["path"] == "z-after.md"]
            pathological_indexed = listed
        # SIGTERM mid-document
        write(root, "z-pathological-2.md", "# Long 2\n\n" + pathological_line(unit, int(line_mb * 1_000_000)) + "\n")
        d.call("reindex")
        wait_for(lambda: d.call("status")["daemon"]["ingesting"], timeout=60)
        time.sleep(1.0)
        t1 = time.monotonic()
        d.proc.send_signal(__import__("signal").SIGTERM)
        try:
            d.proc.wait(60)
            stop_s = round(time.monotonic() - t1, 2)
        except subprocess.TimeoutExpired:
            stop_s = "no exit in 60 s"
    finally:
        d.stop()
    p95 = lambda xs: round(percentile(xs, 95), 1)  # noqa: E731
    return {"documents": n_docs, "line_bytes": int(line_mb * 1_000_000), "unit": unit,
            "baseline_ms": {"p50": round(percentile(base, 50), 1), "p95": p95(base)},
            "during_ingest_ms": {"searches": len(during), "p50": round(percentile(during, 50), 1) if during else None,
                                 "p95": p95(during) if during else None},
            "slowest_during": [{"ms": round(ms, 1), "at_s": at} for ms, at in sorted(zip(during, during_at), reverse=True)[:8]],
            "p95_ratio": round(p95(during) / max(p95(base), 0.01), 2) if during else None,
            "ingest_seconds": round(ingest_s, 1), "saw_ingesting": saw_ingesting, "connections_dropped": dropped,
            "unrelated_edit_searchable": bool(after_found), "pathological_document_listed": pathological_indexed,
            "sigterm_mid_document_exit_seconds": stop_s}


def bench_latency_shapes(tmp: Path, model: Path, n_docs: int, line_mb: float, units: str) -> dict | list:
    """bench_ingest_latency once per line shape (one shape: its result alone, as before)."""
    shapes = [u.encode().decode("unicode_escape") for u in units.split(",") if u]
    runs = []
    for i, unit in enumerate(shapes):
        runs.append(bench_ingest_latency(tmp / f"shape-{i}", model, n_docs, line_mb, unit))
        log(f"  {unit!r}: {json.dumps(runs[-1])}")   # each as it ends: a long run may be stopped
    return runs[0] if len(runs) == 1 else runs


# -- full-size hostile corpus ------------------------------------------------------------------

def bench_big(embedder, tmp: Path) -> dict:
    root = tmp / "hostile"
    expect = H.hostile_corpus(root, big_line_bytes=10_000_000, headings=100_000)
    e = engine_for([root], embedder)

    def progress(i, n, path):
        if path == "vanish.md":
            (root / "vanish.md").unlink()

    t = time.monotonic()
    report = e.refresh(progress=progress)
    seconds = time.monotonic() - t
    docs = e.catalog.documents()
    indexed = sorted(p for p, w in expect.items() if w == "indexed" and p in docs)
    files = {p: (root / p).read_bytes() for p, w in expect.items() if w == "indexed" or p == "bad-utf8.md"}
    out = {"seconds": round(seconds, 1), "documents": len(docs), "expected_indexed": sum(
        1 for w in expect.values() if w == "indexed"), "indexed": len(indexed),
        "sections": e.catalog.counts()["sections"], "warnings": report.warnings,
        "store_problems": H.check_index(e.dir, files)["problems"]}
    e.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", type=int, default=20_000, help="hypothesis-generated documents")
    ap.add_argument("--mutations", type=int, default=5_000, help="mutated real corpus files")
    ap.add_argument("--doc-timeout", type=float, default=5.0, help="seconds one mutated document may take")
    ap.add_argument("--queries", type=int, default=5_000)
    ap.add_argument("--protocol", type=int, default=5_000)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--kill-docs", type=int, default=300)
    ap.add_argument("--faults", type=int, default=200)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--big", action="store_true", help="also the 10 MB line / 100k headings corpus")
    ap.add_argument("--line-mb", type=float, default=5.0, help="size of the pathological lines (long_lines, latency)")
    ap.add_argument("--latency-units", default="a-",
                    help="comma-separated line shapes (tests/adversarial_inputs.LINE_UNITS) for the latency "
                         "section, one run each; \\n and \\t are read as escapes")
    ap.add_argument("--file-mb", type=float, default=10.0, help="size of the memory-shaped files (big_files)")
    ap.add_argument("--only", default="", help="comma-separated: parser,queries,protocol,faults,kills,churn,saves,"
                                               "concurrency,big,bombs,long_lines,big_files,special,damaged,latency,scope")
    ap.add_argument("--saves", type=int, default=2000, help="saves of one note (saves)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(","))) or {"parser", "queries", "protocol", "faults", "kills",
                                                      "churn", "saves", "concurrency", "bombs", "long_lines", "big_files",
                                                      "special", "damaged", "latency"} | ({"big"} if args.big else set())
    base = Path(tempfile.mkdtemp(prefix="bench-robustness-"))
    os.environ["REMEMBRANCER_DATA_DIR"] = str(base / "data")
    model = build_tiny_model(base / "model")
    from remembrancer.indexer.models.embed import load_embedder_from_dir

    embedder = load_embedder_from_dir(model)
    notes = base / "notes"
    shutil.copytree(EXAMPLES, notes)
    results: dict = {}
    steps = [
        ("parser", lambda: bench_parser(args.parser, args.mutations, base / "failures", args.doc_timeout)),
        ("queries", lambda: bench_queries(args.queries, embedder, base / "failures", notes)),
        ("protocol", lambda: bench_protocol(args.protocol, base / "protocol", model, notes)),
        ("faults", lambda: bench_faults(args.faults, embedder, base)),
        ("kills", lambda: bench_kills(args.kills, args.kill_docs, base / "kills", model)),
        ("churn", lambda: bench_churn(args.docs, embedder, base / "churn")),
        ("saves", lambda: bench_saves(args.docs, args.saves, embedder, base / "saves")),
        ("concurrency", lambda: bench_concurrency(args.clients, args.docs, base / "concurrency", model)),
        ("big", lambda: bench_big(embedder, base)),
        ("bombs", lambda: bench_bombs(embedder, base)),
        ("long_lines", lambda: bench_long_lines(args.line_mb)),
        ("big_files", lambda: bench_big_files(base, args.file_mb)),
        ("special", lambda: bench_special_files(embedder, base)),
        ("damaged", lambda: bench_damaged_stores(embedder, base)),
        ("latency", lambda: bench_latency_shapes(base / "latency", model, min(args.docs, 300), args.line_mb,
                                                 args.latency_units)),
        ("scope", lambda: scope_escapes.run(base / "scope", embedder)),  # only with --only scope: bench/scope_escapes.py
    ]
    try:
        for name, fn in steps:
            if name not in only:
                continue
            log(f"== {name}")
            (base / name).mkdir(exist_ok=True)
            try:
                results[name] = fn()
            except Exception:
                results[name] = {"error": traceback.format_exc()}
            log(json.dumps(results[name], indent=1, default=str)[:3000])
    finally:
        if any(r.get("failures") for r in results.values() if isinstance(r, dict)):
            log(f"failing inputs kept in {base / 'failures'}")
            for name in ("data", "model", "notes", "kills", "churn", "saves", "concurrency", "protocol", "faults", "hostile",
                         "bombs", "special", "latency", "damaged-corpus"):
                shutil.rmtree(base / name, ignore_errors=True)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(results, indent=1, default=str))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
