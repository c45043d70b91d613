"""`remembrancer …` — the command line over the engine.

Exit codes scripts can trust: 0 ok; 1 a search found nothing strong; 2 bad input or setup (the
message says what to do); 3 the index is unusable; 70 an internal error (a bug: re-run with
--debug and report it).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from indexer.errors import UserError

EXIT_OK, EXIT_NOTHING, EXIT_USER, EXIT_INDEX, EXIT_BUG = 0, 1, 2, 3, 70

log = logging.getLogger("remembrancer")


def _add_root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", action="append", metavar="DIR",
                   help="corpus root (repeatable; default: roots from the config file)")


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", action="append", default=[], help="doc type (repeatable: any of them)")
    p.add_argument("--path", help="path prefix inside the corpus, e.g. runbooks/")
    p.add_argument("--tag", action="append", default=[], dest="tags", help="front matter tag (repeatable: all of them)")
    p.add_argument("--since", help="section date on or after YYYY-MM-DD")
    p.add_argument("--until", help="section date on or before YYYY-MM-DD")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="remembrancer", description="Hybrid search over a Markdown memory.")
    ap.add_argument("--debug", action="store_true", help="verbose logs and tracebacks on stderr")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", help="index (or incrementally update) the corpus")
    _add_root(p)
    p.add_argument("--reembed", action="store_true", help="drop stored vectors and embed everything again")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("search", help="hybrid search: the best section in full, pointers to the rest")
    p.add_argument("query", nargs="?", default="", help="the question (may be empty when filters are given)")
    _add_root(p)
    _add_filters(p)
    p.add_argument("-n", "--limit", type=int, default=5)
    p.add_argument("--exact", action="store_true", help="literal string match only (error strings, paths, IDs)")
    p.add_argument("--explain", action="store_true", help="show why each result ranked where it did")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("read", help="print one section, a line range, or a page of a document")
    p.add_argument("path")
    _add_root(p)
    p.add_argument("--heading", help="breadcrumb, or a unique trailing part of it")
    p.add_argument("--lines", help="START:END (1-based, inclusive)")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--max-chars", type=int, default=20_000)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("outline", help="a document's sections with line ranges and sizes")
    p.add_argument("path")
    _add_root(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("status", help="what is indexed, with which model, and how fresh")
    _add_root(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("eval", help="score retrieval on a labelled query set (JSONL)")
    p.add_argument("queries", help="a .jsonl query file (see ../shared/eval/README.md)")
    _add_root(p)
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--misses", action="store_true", help="list every miss")
    p.add_argument("--json", action="store_true")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except UserError as e:
        _error(args, e)
        return EXIT_INDEX if e.code in ("no_index", "index_broken") else EXIT_USER
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug: one line by default, the traceback with --debug
        if args.debug:
            raise
        print(f"remembrancer: internal error: {type(e).__name__}: {e} (re-run with --debug for details)",
              file=sys.stderr)
        return EXIT_BUG


def _error(args, e: UserError) -> None:
    if getattr(args, "json", False):
        print(json.dumps({"error": e.to_dict()}, ensure_ascii=False))
    print(f"remembrancer: {e}", file=sys.stderr)


def _engine(args, refresh: bool = True):
    """Open the corpus's engine in-process and bring it up to date (fast when nothing changed)."""
    from indexer.config import load_config
    from indexer.engine import Engine

    config = load_config(args.root)
    engine = Engine(config)
    if refresh:
        report = engine.refresh(progress=_progress_bar() if not getattr(args, "quiet", False) else None)
        engine.last_report = report
    return engine


def _progress_bar():
    """A rich progress bar on stderr that appears only when there is real work (> ~1 s)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    state: dict = {"bar": None, "t0": time.monotonic()}

    def update(done: int, total: int, path: str) -> None:
        if state["bar"] is None:
            if time.monotonic() - state["t0"] < 1.0 and done < total:
                return
            bar = Progress(TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                           TextColumn("{task.fields[path]}", style="dim"),
                           console=Console(stderr=True), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("index", total=total, path="")
        state["bar"].update(state["task"], completed=done, path=path[-50:])
        if done >= total:
            state["bar"].stop()

    return update


# -- commands --------------------------------------------------------------------------------------

def cmd_index(args) -> int:
    from indexer.config import load_config
    from indexer.engine import Engine

    engine = Engine(load_config(args.root))
    report = engine.refresh(progress=_progress_bar(), reembed=args.reembed)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(f"{report.scanned} files: {report.added} added, {report.updated} updated, "
              f"{report.removed} removed, {report.unchanged} unchanged; "
              f"{report.embedded} passages embedded in {report.seconds:.2f}s")
        for w in report.warnings[:20]:
            print(f"warning: {w}", file=sys.stderr)
        if len(report.warnings) > 20:
            print(f"warning: … and {len(report.warnings) - 20} more (see `remembrancer status`)", file=sys.stderr)
    return EXIT_OK


def _filters(args):
    from indexer.filters import Filters

    return Filters(types=args.type, path=args.path, tags=args.tags, since=args.since, until=args.until)


def cmd_search(args) -> int:
    from indexer.search import SearchRequest, search

    engine = _engine(args)
    req = SearchRequest(query=args.query, limit=args.limit, filters=_filters(args), exact=args.exact,
                        explain=args.explain)
    out = search(engine, req)
    out["index"] = freshness(engine)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print_search(out)
    return EXIT_OK if out["results"] else EXIT_NOTHING


def freshness(engine) -> dict:
    """The freshness verdict of an in-process answer: it was refreshed just now, so it is at disk state."""
    st = engine.status()
    report = getattr(engine, "last_report", None)
    return {"verdict": "fresh", "detail": "re-checked against the files just now",
            "documents": st["documents"], "sections": st["sections"], "generation": st["generation"],
            "last_indexed_at": st["last_indexed_at"],
            "changes_applied": (report.added + report.updated + report.removed) if report else 0}


def print_search(out: dict) -> None:
    idx = out.get("index", {})
    print(f"[index {idx.get('verdict', '?')}: {idx.get('documents', '?')} documents, "
          f"{idx.get('sections', '?')} sections]")
    for n in out.get("notes", []):
        print(f"note: {n}")
    results = out["results"]
    if out.get("no_strong_match"):
        print("No strong match. Weak candidates (may not answer the question):")
        results = out.get("best_weak", [])
    elif not results:
        print(out.get("message", "no results"))
        return
    for i, r in enumerate(results):
        loc = f"{r['path']}:{r['lines'][0]}-{r['lines'][1]}"
        head = r["heading"] or "(preamble)"
        flags = " [stale]" if r.get("stale") else ""
        print(f"\n{i + 1}. {head}{flags}\n   {loc}  {r['type']}  {r['date'] or ''}  "
              f"score {r['score']:.3f} ({r['provenance']})  ~{r['tokens']} tokens")
        if i == 0 and "content" in r and not out.get("no_strong_match"):
            print("   " + r["content"].replace("\n", "\n   "))
        else:
            print(f"   {r['snippet']}")
        if r.get("also"):
            print("   also in this document: " + "; ".join(r["also"]))
        for w in r.get("why", []):
            print(f"   why: {w}")


def cmd_read(args) -> int:
    from indexer.reader import read

    engine = _engine(args, refresh=False)
    lines = None
    if args.lines:
        try:
            a, b = args.lines.split(":")
            lines = (int(a), int(b))
        except ValueError:
            raise UserError(f"--lines must be START:END, got {args.lines!r}", param="lines") from None
    out = read(engine, args.path, heading=args.heading, lines=lines, offset=args.offset, max_chars=args.max_chars)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(out["content"])
        if out["truncated"]:
            print(f"\n[… {out['total_chars'] - out['offset'] - out['returned_chars']} more chars; "
                  f"continue with --offset {out['next_offset']}]", file=sys.stderr)
    return EXIT_OK


def cmd_outline(args) -> int:
    from indexer.reader import outline

    out = outline(_engine(args, refresh=False), args.path)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(f"{out['path']} ({out['type']}, {out['date'] or 'undated'}, ~{out['total_tokens']} tokens)")
        for s in out["sections"]:
            indent = "  " * max(s["level"] - 1, 0)
            print(f"{indent}{s['heading'].split(' > ')[-1] or '(preamble)'}  "
                  f"[{s['lines'][0]}-{s['lines'][1]}, ~{s['tokens']} tokens]")
    return EXIT_OK


def cmd_status(args) -> int:
    engine = _engine(args, refresh=False)
    st = engine.status()
    if args.json:
        print(json.dumps(st, indent=2, ensure_ascii=False))
        return EXIT_OK
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st["last_indexed_at"])) if st["last_indexed_at"] else "never"
    print(f"index: {st['index_dir']}")
    for r in st["roots"]:
        head = ""
        if r["head_current"]:
            same = r["head_indexed"] == r["head_current"]
            head = f"  HEAD {r['head_current'][:10]} ({'indexed' if same else 'NOT indexed yet'})"
        print(f"root {r['name']}: {r['path']}{head}")
    print(f"{st['documents']} documents, {st['sections']} sections, {st['passages']} passages, "
          f"{st['vectors']} vectors; generation {st['generation']}; last indexed {when}")
    m = st["model"]
    print(f"model: {m['name']} ({m['dim']} dims, sha256 {m['model_sha256'][:12]}…)" if m else "model: none yet")
    for w in st["warnings"]:
        print(f"warning: {w}")
    return EXIT_OK


def cmd_eval(args) -> int:
    from indexer.evaluate import format_report, run_eval

    report = run_eval(args.queries, args.root, limit=args.limit)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_report(report, misses=args.misses))
    return EXIT_OK


COMMANDS = {
    "index": cmd_index, "search": cmd_search, "read": cmd_read, "outline": cmd_outline,
    "status": cmd_status, "eval": cmd_eval,
}

if __name__ == "__main__":
    sys.exit(main())
