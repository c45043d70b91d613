"""What the Claude Code prompt hook injects, and what it costs a prompt, against one real daemon with
the real default model.

    .venv/bin/python bench/bench_claude_hook.py [--runs 20] [--eval ../shared/eval] [--answers FILE]

1. Inject rates, old gate ("the search did not abstain") against the hook's gate, on examples/notes
   and the three memory corpora (memory-dev, -2, -3): for ordinary coding-session prompts
   (bench/claude_hook_ordinary_prompts.txt; none is answered by any notes) the rate should be
   ≤ 1 in 20; for the corpus's own answerable questions (read at run time from the eval set's
   queries, never copied here) ≥ 2 in 3. Each prompt is searched once, with the hook's own
   parameters; both gates judge the same answer. `--answers FILE` also writes every answer (JSON).
2. Wall time of the hook process as Claude Code runs it (p50/p95, ms): on the ordinary prompts and on
   memory questions of memory-dev, each with the old and the new gate; SessionStart; no daemon;
   next to a bare interpreter start. Prints which prompts the new gate gets wrong, then the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
from remembrancer.wire import Client  # noqa: E402
from remembrancer.hooks import claude_code as hook  # noqa: E402
from remembrancer.indexer.search.evaluate import percentile  # noqa: E402

HOOK = [sys.executable, "-P", "-m", "remembrancer.hooks.claude_code"]
# The same script with the old gate in place of `strong`: its wall time, as the hook pays it.
OLD_HOOK = [sys.executable, "-P", "-c", "import sys; from remembrancer.hooks import claude_code as h; "
            "h.strong = lambda out: bool(out and not out.get('no_strong_match') and out.get('results')); "
            "sys.exit(h.main())"]
ORDINARY = Path(__file__).with_name("claude_hook_ordinary_prompts.txt")
CORPORA = ("memory-dev", "memory-dev-2", "memory-dev-3")
EVAL = next((d for d in (PROJECT.parent / "shared" / "eval", PROJECT.parent.parent / "shared" / "eval")  # a worktree
             if d.is_dir()), PROJECT.parent / "shared" / "eval")


def old_gate(prompt: str, out: dict | None) -> bool:   # as OLD_HOOK's
    """The gate before issue 27 item 1: inject whenever the search did not abstain."""
    return bool(out and not out.get("no_strong_match") and out.get("results"))


def new_gate(prompt: str, out: dict | None) -> bool:
    return hook.strong(out)


def ordinary_prompts() -> list[str]:
    return [ln.strip() for ln in ORDINARY.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def memory_questions(eval_dir: Path, name: str) -> list[str]:
    rows = [json.loads(ln) for ln in (eval_dir / "queries" / f"{name}.jsonl").read_text().splitlines() if ln.strip()]
    return [r["query"] for r in rows if r.get("answerable")]


def timed(cmd: list[str], env: dict, stdin: str = "") -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True)
    return (time.perf_counter() - t0) * 1000, r.stdout


def wait_fresh(sock: Path, root: Path, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with Client(sock, timeout=60) as c:
                st = c.call("status", roots=[str(root)])
            if st["freshness"]["verdict"] == "fresh" and not st["daemon"]["ingesting"] and st["documents"]:
                return
        except Exception:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{root} not fresh in {timeout}s")


def event(root: Path, prompt: str) -> str:
    return json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(root), "session_id": "b"})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="runs of each fixed wall-time case")
    ap.add_argument("--eval", type=Path, default=EVAL, help="the eval sets (default: ../shared/eval)")
    ap.add_argument("--answers", type=Path, help="write every search answer here (JSON)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rmb-hook-", dir="/tmp"))
    roots = {"examples/notes": tmp / "notes"}
    shutil.copytree(PROJECT / "examples" / "notes", roots["examples/notes"])
    for name in CORPORA:
        roots[name] = tmp / name
        shutil.copytree(args.eval / "corpora" / name, roots[name])
    sock = tmp / "d.sock"
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "data"), "REMEMBRANCER_SOCKET": str(sock),
           "REMEMBRANCER_CONFIG": str(tmp / "config.toml")}
    daemon = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    answers: dict[str, list] = {}
    rates, walls = [], {}
    try:
        while not sock.exists():
            time.sleep(0.1)
        for name, root in roots.items():
            wait_fresh(sock, root)
        ordinary = ordinary_prompts()
        for name, root in roots.items():
            sets = {"ordinary": ordinary}
            if name in CORPORA:
                sets["memory questions"] = memory_questions(args.eval, name)
            for kind, prompts in sets.items():
                got = []
                with Client(sock, timeout=60) as c:
                    for p in prompts:
                        got.append((p, c.call("search", **hook.search_params(p, str(root)))))
                answers[f"{name} / {kind}"] = got
                old = sum(old_gate(p, o) for p, o in got)
                new = sum(new_gate(p, o) for p, o in got)
                rates.append((name, kind, len(got), old, new))
                wrong = [p for p, o in got if new_gate(p, o) != (kind != "ordinary")]
                if wrong:
                    print(f"{name} / {kind}: new gate {'injects' if kind == 'ordinary' else 'misses'}: "
                          + "; ".join(w[:60] for w in wrong))
        # Wall time as Claude Code pays it: one process per prompt, on the ordinary set and on memory-dev's questions.
        md = roots["memory-dev"]
        for gate, cmd in (("old", OLD_HOOK), ("new", HOOK)):
            walls[f"{gate} gate, ordinary (memory-dev)"] = [timed(cmd, env, event(md, p))[0] for p in ordinary]
            walls[f"{gate} gate, questions (memory-dev)"] = [timed(cmd, env, event(md, p))[0]
                                                            for p in memory_questions(args.eval, "memory-dev")]
        walls["SessionStart"] = [timed(HOOK, env, json.dumps({"hook_event_name": "SessionStart", "cwd": str(md)}))[0]
                                 for _ in range(args.runs)]
        walls["python -c pass (baseline)"] = [timed([sys.executable, "-c", "pass"], env)[0] for _ in range(args.runs)]
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        walls["no daemon"] = [timed(HOOK, env, event(md, "x"))[0] for _ in range(args.runs)]
    finally:
        if daemon.poll() is None:
            daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.answers:
        args.answers.write_text(json.dumps(answers, indent=1))
    print(f"{'corpus':16} {'prompts':18} {'n':>4} {'old gate':>14} {'new gate':>14}")
    for name, kind, n, old, new in rates:
        print(f"{name:16} {kind:18} {n:4d} {old:4d} ({old / n:5.1%}) {new:4d} ({new / n:5.1%})")
    print(f"\n{'hook wall time':32} {'n':>4} {'p50 ms':>8} {'p95 ms':>8}")
    for name, t in walls.items():
        print(f"{name:32} {len(t):4d} {percentile(t, 50):8.1f} {percentile(t, 95):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
