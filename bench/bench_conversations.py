"""Conversations at scale: what an appended exchange costs as a session grows, what a pass that
finds nothing new costs over many sessions, and indexing throughput per embedded passage against
notes in the same run (the default model, in-process: the daemon's ingest path minus its 0.1 s
debounce; tests/daemon/test_conversations_daemon.py shows the daemon doing it live).

    .venv/bin/python bench/bench_conversations.py [--eval-dir ../shared/eval] [--sessions 1000]
        [--sizes 10 100 1000] [--appends 10] [--only append secret_append …]

1. append: a session of N exchanges (made from the dev transcripts' lines with fresh uuids and a
   unique word per exchange, so nothing is shared with the index), indexed; then `--appends`
   times one new exchange (a prompt and an answer) is appended and `refresh_paths` is timed until
   it returns — p50 / p95 per N, and the ratio to the smallest N (growth with session size).
1b. secret_append: the same, when the new exchange gives a new value away as a secret: held by no
   earlier exchange ("tail"), or shown bare by the first one ("first": the session is read whole and
   written again from there, its old words purged from the index files).
2. no-change pass: `--sessions` session files (the dev set's copied under new session ids),
   indexed once; then a full `refresh` that finds nothing changed is timed (best of 3).
3. throughput: the dev transcripts and a notes corpus (memory-dev) each indexed from scratch;
   seconds per embedded passage, and their ratio (the issue asks for ≤ 1.5×).
4. notes beside conversations: memory-dev's questions searched as notes (the MCP default) with no
   conversation folder, and with the dev transcripts beside them (a notes search then also asks the
   conversations index for Claude Code's memory files: indexer/search/across.py) — p50 / p95 wall
   ms, each question's fastest of 3 (the model's query cache emptied before each), and the ratio.
5. the daemon: a real `remembrancer serve --conversations` on its own socket; `--appends` times a
   new exchange is appended to a session and a socket client searches until it is found — p50 / p95
   seconds from the write (the watcher's debounce included).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
ROOT = Path(__file__).resolve().parent.parent


def _engine(kind: str, folder: Path, embedder):
    from remembrancer.indexer.config import CONVERSATIONS, Config, make_roots
    from remembrancer.indexer.engine import Engine

    if kind == CONVERSATIONS:
        cfg = Config(conversations=make_roots([folder], kind=CONVERSATIONS)).conversation_config()
    else:
        cfg = Config(roots=make_roots([folder]))
    return Engine(cfg, embedder=embedder)


def _line(session_id: str, kind: str, content, parent: str | None, t: float) -> dict:
    u = str(uuidlib.uuid4())
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z"
    msg = {"role": kind, "content": content}
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/app",
            "sessionId": session_id, "version": "2.1.29", "gitBranch": "main", "type": kind, "message": msg,
            "uuid": u, "timestamp": ts}


T0 = 1.77e9   # the made-up sessions' first timestamp


def _exchange(session_id: str, n: int, t: float, parent: str | None) -> list[dict]:
    word = f"marker{n}x{uuidlib.uuid4().hex[:6]}"
    p = _line(session_id, "user", f"Exchange {n}: why does the {word} job retry after a timeout?", parent, t)
    a = _line(session_id, "assistant", [{"type": "text", "text": f"The {word} job retries because its "
              f"handler raises TimeoutError after 30 s; we capped it at {n % 7 + 2} retries and logged each."}],
              p["uuid"], t + 1)
    return [p, a]


def _session(folder: Path, n: int, first_extra: str = "") -> tuple[str, Path, str | None]:
    """A session of `n` exchanges written to `folder` (`first_extra` added to the first answer): its
    id, its file, the last line's uuid."""
    folder.mkdir(parents=True)
    sid = str(uuidlib.uuid4())
    path = folder / f"{sid}.jsonl"
    lines, parent = [], None
    for i in range(n):
        ex = _exchange(sid, i, T0 + 10 * i, parent)
        if i == 0 and first_extra:
            ex[-1]["message"]["content"][0]["text"] += first_extra
        parent = ex[-1]["uuid"]
        lines += ex
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return sid, path, parent


def _timed_appends(engine, sid: str, path: Path, n: int, parent: str | None, prompts: list[str | None]) -> list[float]:
    """Append one exchange per prompt (None: the made-up one) to the session of `n` exchanges and time
    `refresh_paths` until it returns, each; sorted."""
    took = []
    for k, prompt in enumerate(prompts):
        ex = _exchange(sid, n + k, T0 + 10 * (n + k), parent)
        if prompt is not None:
            ex[0]["message"]["content"] = prompt
        parent = ex[-1]["uuid"]
        with path.open("a") as fh:
            fh.write("".join(json.dumps(x) + "\n" for x in ex))
        os.utime(path, ns=(time.time_ns() - 5_000_000_000,) * 2)   # past the racy window, as a real file soon is
        t0 = time.perf_counter()
        engine.refresh_paths([str(path)])
        took.append(time.perf_counter() - t0)
    return sorted(took)


def _p50_p95_ms(took: list[float]) -> dict:
    return {"append_p50_ms": round(statistics.median(took) * 1000, 1),
            "append_p95_ms": round(took[max(int(len(took) * 0.95) - 1, 0)] * 1000, 1)}


def bench_append(tmp: Path, embedder, sizes: list[int], appends: int) -> list[dict]:
    out = []
    for n in sizes:
        sid, path, parent = _session(tmp / f"append-{n}" / "-home-dev-app", n)
        engine = _engine("conversations", path.parent.parent, embedder)
        t0 = time.perf_counter()
        engine.refresh()
        first = time.perf_counter() - t0
        took = _timed_appends(engine, sid, path, n, parent, [None] * appends)
        engine.close()
        out.append({"exchanges": n, "lines": 2 * n, "first_index_s": round(first, 2), **_p50_p95_ms(took)})
    base = out[0]["append_p50_ms"] or 1
    for row in out:
        row["vs_smallest"] = round(row["append_p50_ms"] / base, 2)
    return out


def bench_secret_append(tmp: Path, embedder, sizes: list[int], appends: int) -> list[dict]:
    """An appended exchange that gives a new value away as a secret (`export PARTNER_API_KEY=v`), as
    bench_append times one: `where` "tail" — no earlier exchange holds the value (the file's bytes
    before the tail are looked at, not parsed) — and "first" — the session's first exchange shows it
    bare, so the session is read whole and every exchange from the first on is written again (the
    worst case), the keyword index purges the session's old words and the catalog is compacted."""
    import random
    import string

    rng = random.Random(11)
    out = []
    for n in sizes:
        for where in ("tail", "first"):
            values = ["".join(rng.choice(string.ascii_letters + string.digits) for _ in range(19)) + "7aZ"
                      for _ in range(appends)]
            shown = " The partner keys it sent: " + ", ".join(values) + "." if where == "first" else ""
            sid, path, parent = _session(tmp / f"secret-{where}-{n}" / "-home-dev-app", n, shown)
            engine = _engine("conversations", path.parent.parent, embedder)
            engine.refresh()
            held = "".join(x.content for x in engine.catalog.sections(f"-home-dev-app/{sid}.jsonl"))
            assert all(v in held for v in values) == (where == "first"), "no secret until an append gives it away"
            took = _timed_appends(engine, sid, path, n, parent,
                                  [f"Rotate it: export PARTNER_API_KEY={v} && ./check.sh" for v in values])
            stored = "".join(x.content for x in engine.catalog.sections(f"-home-dev-app/{sid}.jsonl"))
            assert not any(v in stored for v in values), "a value given away is still stored"
            engine.close()
            out.append({"exchanges": n, "where": where, **_p50_p95_ms(took)})
    return out


def bench_no_change(tmp: Path, embedder, dev: Path, sessions: int) -> dict:
    files = sorted(p for p in dev.rglob("*.jsonl") if "subagents" not in p.parts and not p.name.startswith("agent-"))
    folder = tmp / "many" / "-home-dev-app"
    folder.mkdir(parents=True)
    for i in range(sessions):
        src = files[i % len(files)]
        sid = str(uuidlib.uuid4())
        text = src.read_text().replace(src.stem, sid)
        (folder / f"{sid}.jsonl").write_text(text)
    old = time.time_ns() - 10_000_000_000
    for p in folder.iterdir():
        os.utime(p, ns=(old, old))
    engine = _engine("conversations", folder.parent, embedder)
    t0 = time.perf_counter()
    first = engine.refresh()
    first_s = time.perf_counter() - t0
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = engine.refresh()
        runs.append(time.perf_counter() - t0)
        assert r.unchanged == sessions, r.to_dict()
    engine.close()
    return {"sessions": sessions, "first_index_s": round(first_s, 1), "embedded": first.embedded,
            "no_change_pass_s": round(min(runs), 3)}


def bench_throughput(tmp: Path, embedder, dev: Path, notes: Path) -> dict:
    rows = {}
    for kind, src in (("conversations", dev), ("notes", notes)):
        data = tmp / f"tp-{kind}"
        os.environ["REMEMBRANCER_DATA_DIR"] = str(data)
        engine = _engine(kind, src, embedder)
        t0 = time.perf_counter()
        r = engine.refresh()
        s = time.perf_counter() - t0
        engine.close()
        rows[kind] = {"files": r.scanned, "embedded": r.embedded, "seconds": round(s, 2),
                      "ms_per_passage": round(1000 * s / max(r.embedded, 1), 2)}
    rows["ratio"] = round(rows["conversations"]["ms_per_passage"] / rows["notes"]["ms_per_passage"], 2)
    return rows


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[max(int(round(q * len(values))) - 1, 0)]


def bench_notes_beside(tmp: Path, embedder, dev: Path, eval_dir: Path) -> dict:
    from remembrancer.indexer import api
    from remembrancer.indexer.answers import Freshness
    from remembrancer.indexer.search.evaluate import load_cases

    os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / "beside")
    notes = _engine("notes", eval_dir / "corpora" / "memory-dev", embedder)
    talks = _engine("conversations", dev, embedder)
    notes.refresh()
    talks.refresh()
    fresh = lambda view: Freshness(verdict="fresh")  # noqa: E731
    read_notes = lambda m, p: api.dispatch_read(notes, m, p, fresh)  # noqa: E731
    read_talks = lambda m, p: api.dispatch_read(talks, m, p, fresh)  # noqa: E731
    queries = [c.query for c in load_cases(eval_dir / "queries" / "memory-dev.jsonl")]
    times: dict[str, list[float]] = {"alone": [], "beside": []}
    for q in queries:
        for name, conv in (("alone", None), ("beside", read_talks)):
            best = float("inf")
            for _ in range(3):
                if hasattr(embedder, "_queries"):   # each run embeds the question (a new question would)
                    embedder._queries = type(embedder._queries)()
                t0 = time.perf_counter()
                api.read_across("search", {"query": q}, read_notes, conv)
                best = min(best, time.perf_counter() - t0)
            times[name].append(best * 1000)
    notes.close()
    talks.close()
    out = {name: {"p50_ms": round(_p(v, 0.5), 1), "p95_ms": round(_p(v, 0.95), 1)} for name, v in times.items()}
    out["p50_ratio"] = round(out["beside"]["p50_ms"] / out["alone"]["p50_ms"], 2)
    out["questions"] = len(queries)
    return out


def bench_daemon_append(tmp: Path, dev: Path, appends: int) -> dict:
    from remembrancer.wire import Client, ping

    folder = tmp / "live"
    shutil.copytree(dev, folder)
    sock = Path(tempfile.mkdtemp(prefix="bc-", dir="/tmp")) / "d.sock"   # AF_UNIX paths stay short
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "daemon-data"), "REMEMBRANCER_SOCKET": str(sock)}
    proc = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--conversations", str(folder)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    session = sorted(p for p in folder.glob("*/*.jsonl") if not p.name.startswith("agent-"))[0]
    sid = session.stem
    took = []
    try:
        deadline = time.monotonic() + 120
        while ping(sock) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        with Client(sock, timeout=60) as c:
            params = {"conversations": [str(folder)], "corpus": "conversations", "without_notes": True}
            c.call("search", query="warm up", **params)   # the first pass and the model load, untimed
            parent = None
            for k in range(appends):
                word = f"zebracorn{k}x{uuidlib.uuid4().hex[:6]}"
                lines = _exchange(sid, k, time.time(), parent)
                lines[0]["message"]["content"] = f"What about the {word} flag?"
                parent = lines[-1]["uuid"]
                t0 = time.perf_counter()
                with session.open("a") as fh:
                    fh.write("".join(json.dumps(x) + "\n" for x in lines))
                while True:
                    hits = c.call("search", query=f"{word} flag", **params).get("results") or []
                    if any(word in (r.get("content") or r.get("snippet") or "") for r in hits):
                        break
                    if time.perf_counter() - t0 > 30:
                        raise TimeoutError(word)
                    time.sleep(0.02)
                took.append(time.perf_counter() - t0)
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(sock.parent, ignore_errors=True)
    return {"appends": appends, "p50_s": round(_p(took, 0.5), 3), "p95_s": round(_p(took, 0.95), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--appends", type=int, default=10)
    ap.add_argument("--only", nargs="+", choices=["append", "secret_append", "no_change", "throughput", "beside",
                                                  "daemon"],
                    help="these parts only")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-conv-"))
    os.environ["REMEMBRANCER_DATA_DIR"] = str(tmp / "data")
    os.environ.setdefault("REMEMBRANCER_CONFIG", str(tmp / "none.toml"))
    from remembrancer.indexer.models.embed import load_embedder

    embedder = load_embedder(None)
    eval_dir = Path(args.eval_dir)
    dev = eval_dir / "corpora" / "transcripts-dev"
    parts = {"append": lambda: bench_append(tmp, embedder, args.sizes, args.appends),
             "secret_append": lambda: bench_secret_append(tmp, embedder, args.sizes, args.appends),
             "no_change": lambda: bench_no_change(tmp, embedder, dev, args.sessions),
             "throughput": lambda: bench_throughput(tmp, embedder, dev, eval_dir / "corpora" / "memory-dev"),
             "beside": lambda: bench_notes_beside(tmp, embedder, dev, eval_dir),
             "daemon": lambda: bench_daemon_append(tmp, dev, args.appends)}
    try:
        result = {name: run() for name, run in parts.items() if not args.only or name in args.only}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
