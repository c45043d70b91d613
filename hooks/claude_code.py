"""The Claude Code hook: memory in front of the model when it clearly helps, and never in the way.

Claude Code runs this on every prompt (UserPromptSubmit) and at session start (SessionStart),
passing one JSON object on stdin (`hook_event_name`, `prompt`, `cwd`, `session_id`, …); what it
prints on stdout, with exit 0, is added to the model's context.

- UserPromptSubmit: the top section of a search and its short runners-up, only when the notes
  answer the prompt (see `strong`: a section that merely did not make the search abstain is noise
  in every prompt), within a small token budget.
- SessionStart: one line — where the memory lives and how fresh it is.

Stdlib only (remembrancer.wire) and one socket exchange with the daemon, like hooks/notify.py: a
prompt must never wait for an interpreter importing the engine. Everything runs under one hard deadline; any
failure — no daemon, no open corpus for this project, a slow answer, bad input — prints nothing
and exits 0.

    python -P -m remembrancer.hooks.claude_code < hook-input.json
"""

from __future__ import annotations

import json
import os
import sys
import time

from remembrancer import build, wire

DEADLINE_S = 0.25          # the whole exchange; with interpreter start-up, under ~300 ms
# What a strong match puts in front of the model: the best section and the short runners-up the
# answer carries whole, within this budget (the answer's, so the injected text is smaller). On the
# memory sets (bench/hook_context.py) a fully-right section is then held whole in 84.6 / 83.6 /
# 79.3 % of the prompts the hook speaks on, against 70.8 / 70.5 / 65.5 % for the best section
# alone (limit 1, 600), at a median 363 / 349 / 410 tokens against 200 / 189 / 192.
BUDGET_TOKENS = 900
SEARCH_LIMIT = 3
MAX_PROMPT_CHARS = 2000    # a pasted log is not a question: its head is enough to search with
# The semantic match a section needs to be put in front of the model: the search's own bar for a
# question using a name the notes lack (indexer/search/answer.py ABSTAIN_DENSE); on memory-dev it keeps out
# every ordinary coding prompt but one and, with the identifier clause, lets in all questions but one.
STRONG_DENSE = 0.45


def ask(method: str, params: dict, deadline: float, path: str | None = None) -> dict | None:
    """One request to the daemon, answered before `deadline` (time.monotonic()), else None."""
    try:   # another user's socket is refused by wire.Client: it would learn our prompts
        ours = build.fingerprint()
        with wire.Client(path or wire.socket_path(), deadline=deadline) as client:
            # never another config's answer, nor another build's (a daemon older than the install)
            out = client.call(method, **params, config=wire.config_identity(), build=ours)
            if client.build != ours:   # a daemon older than build identities ignores the parameter
                return None
    except (wire.DaemonUnavailable, wire.DaemonError, ValueError, KeyError, ImportError, OSError):
        return None   # ValueError: a socket path too long to bind, or an answer that is not JSON
    return out


def project_dir(event: dict) -> str | None:
    return os.environ.get("CLAUDE_PROJECT_DIR") or (event.get("cwd") if isinstance(event.get("cwd"), str) else None)


def search_params(prompt: str, where: str) -> dict:
    return {"within": where, "query": prompt[:MAX_PROMPT_CHARS], "limit": SEARCH_LIMIT,
            "budget_tokens": BUDGET_TOKENS}


def strong(out: dict | None) -> bool:
    """Whether the search's best section answers the prompt, judged by what the answer reports.

    "Did not abstain" is not enough: abstention only says nothing contradicts an answer, and a
    coding prompt ("fix the failing test", "thanks!") shares common words and a little meaning
    with any notes. So the section must also have keyword evidence (`provenance` not "semantic",
    which is also what a "rests on meaning alone" note turns it into) and either mean what the
    prompt says (`scores.dense` ≥ STRONG_DENSE) or hold one of the prompt's identifiers verbatim
    (`scores.literal` > 0: "what is 10.40.1.12?" matches on nothing else).
    docs/claude-hook.md has the figures.
    """
    if not out or out.get("no_strong_match") or not out.get("results"):
        return False
    top = out["results"][0]
    scores = top.get("scores") or {}
    if top.get("provenance") not in ("both", "keyword"):
        return False
    return scores.get("dense", 0) >= STRONG_DENSE or scores.get("literal", 0) > 0


def prompt_context(event: dict, deadline: float, sock: str | None = None) -> str:
    """The top section for this prompt when the match is strong, else ''."""
    prompt = event.get("prompt")
    where = project_dir(event)
    if not isinstance(prompt, str) or not prompt.strip() or not where:
        return ""
    out = ask("search", search_params(prompt, where), deadline, sock)
    return context_text(out) if strong(out) else ""


def _section(r: dict) -> str:
    lines = r.get("lines") or ["?", "?"]
    return f"## {r.get('heading') or '(preamble)'} ({r.get('path')}:{lines[0]}-{lines[1]})\n{r.get('content') or r.get('snippet') or ''}\n"


def context_text(out: dict) -> str:
    """What a strong answer puts in front of the model: the best section, and the short runners-up
    the answer carried whole (the steps beside a runbook's two-line introduction)."""
    top = out["results"][0]
    cut = " (cut; read the rest with the remembrancer `read` tool)" if top.get("content_truncated") else ""
    text = f"remembrancer memory — the section that best matches this prompt{cut}:\n" + _section(top)
    more = [r for r in out["results"][1:] if r.get("content")]
    if more:
        text += "Also close, in full:\n" + "".join(_section(r) for r in more)
    return text


def session_line(event: dict, deadline: float, sock: str | None = None) -> str:
    """'remembrancer: memory in <roots> (<index dir>); index fresh, N documents', or ''."""
    where = project_dir(event)
    if not where:
        return ""
    st = ask("status", {"within": where}, deadline, sock)
    if not st:
        return ""
    fr = st.get("freshness") or {}
    verdict = fr.get("verdict", "?")
    why = fr.get("reason") or ""
    roots = ", ".join(str(r.get("path")) for r in st.get("roots", []))
    return (f"remembrancer: memory in {roots} (index {st.get('index_dir')}); index {verdict}"
            f"{': ' + why if why else ''}, {st.get('documents', '?')} documents — search it with the "
            f"remembrancer MCP tools\n")


def main(stdin=None, stdout=None) -> int:
    """Read the hook input, print the context (or nothing); always exit 0."""
    deadline = time.monotonic() + DEADLINE_S
    try:
        event = json.loads((stdin or sys.stdin).read(1 << 20) or "{}")
        if not isinstance(event, dict):
            return 0
        name = event.get("hook_event_name")
        text = (prompt_context(event, deadline) if name == "UserPromptSubmit"
                else session_line(event, deadline) if name == "SessionStart" else "")
        if text:
            (stdout or sys.stdout).write(text)
    except Exception:  # silent on any failure: a hook must never disturb a prompt
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
