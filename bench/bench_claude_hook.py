"""What the Claude Code hook costs a prompt: wall time of the hook process (as Claude Code runs it)
against a real daemon with the real default model on examples/notes, next to the baseline of a
bare interpreter start in the same run.

    .venv/bin/python bench/bench_claude_hook.py [--runs 20]

Prints p50/p95 in ms for: `python -c pass` (baseline), the hook on a strong match (prints the
section), on a weak match (prints nothing), SessionStart, and with no daemon at all.
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
from remembrancer.daemon.client import Client  # noqa: E402
from remembrancer.indexer.evaluate import percentile  # noqa: E402

HOOK = [sys.executable, "-P", "-m", "remembrancer.hooks.claude_code"]


def timed(cmd: list[str], env: dict, stdin: str = "") -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True)
    return (time.perf_counter() - t0) * 1000, r.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rmb-hook-", dir="/tmp"))
    notes = tmp / "notes"
    shutil.copytree(PROJECT / "examples" / "notes", notes)
    env = {**os.environ, "REMEMBRANCER_DATA_DIR": str(tmp / "data"), "REMEMBRANCER_SOCKET": str(tmp / "d.sock"),
           "REMEMBRANCER_CONFIG": str(tmp / "config.toml")}
    daemon = subprocess.Popen([sys.executable, "-m", "remembrancer", "serve", "--root", str(notes)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                with Client(tmp / "d.sock", timeout=5) as c:
                    st = c.call("status")
                if st["freshness"]["verdict"] == "fresh" and not st["daemon"]["ingesting"]:
                    break
            except Exception:
                pass
            time.sleep(0.2)
        cases = {
            "python -c pass (baseline)": ([sys.executable, "-c", "pass"], ""),
            "UserPromptSubmit, strong match": (HOOK, {"prompt": "how do I restore the database from a backup"}),
            "UserPromptSubmit, weak match": (HOOK, {"prompt": "how do I enable --frobnicate-xyz on kf4"}),
            "SessionStart": (HOOK, {"hook_event_name": "SessionStart"}),
        }
        rows = []
        for name, (cmd, event) in cases.items():
            stdin = ""
            if isinstance(event, dict):
                stdin = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(notes), "session_id": "b",
                                    **event})
            times, out = [], ""
            for _ in range(args.runs):
                ms, out = timed(cmd, env, stdin)
                times.append(ms)
            rows.append((name, times, len(out)))
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
        times = [timed(HOOK, env, json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "x",
                                              "cwd": str(notes)}))[0] for _ in range(args.runs)]
        rows.append(("UserPromptSubmit, no daemon", times, 0))
    finally:
        if daemon.poll() is None:
            daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    base = percentile(rows[0][1], 50)
    print(f"{'case':38} {'p50 ms':>8} {'p95 ms':>8} {'p50 - baseline':>15} {'stdout chars':>13}")
    for name, t, chars in rows:
        p50 = percentile(t, 50)
        print(f"{name:38} {p50:8.1f} {percentile(t, 95):8.1f} {p50 - base:15.1f} {chars:13d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
