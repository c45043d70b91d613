"""A Claude Code session transcript (JSONL) → its exchanges: the units a conversation is searched by.

An **exchange** is a typed user prompt and everything the assistant did up to the next typed
prompt: its text, the tool calls it made and the tool results that matter (errors, command
output), trimmed. Tool results, `isMeta` lines, slash-command echoes and interruptions belong to
the exchange they sit in; they never start one. A subagent file's first line (the Task prompt)
starts its first exchange; a compaction summary (a `user` line flagged `isCompactSummary`, after a
`compact_boundary` system line) starts one of its own, marked so search ranks it below the
exchanges it restates.

The format has no official schema; the facts used here are the ones public readers of these files
rely on (docs/conversations.md names them): one JSON object per line, `type` tells the lines apart,
unknown types are skipped, `summary` / `ai-title` / `custom-title` lines are titles, an assistant
response is split one content block per line, `cwd` (not the lossy folder name) is the real
working folder. A line that is not JSON is a warning naming its line number, never its text.

Pure: bytes in, records out; the caller redacts the rendered text before anything is stored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime

NOT_A_PROMPT = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-caveat>",
                "Caveat: ", "[Request interrupted by user")
COMPACTION = "compaction"
EXCHANGE = "exchange"
SESSION_TYPE = "conversation"   # the doc type of a session's file …
SUBAGENT_TYPE = "subagent"      # … and of a subagent's (sidechain) file
DOC_TYPES = (SESSION_TYPE, SUBAGENT_TYPE)
TITLE_TYPES = ("summary", "ai-title", "custom-title")
COMPACTION_HEADING = "Compaction summary"   # search/rank.py ranks these below the exchanges they restate

# How much of a tool's output an exchange keeps: enough to hold the error or the figure that
# mattered, not the file it echoed. Head and tail: a traceback's last lines name the error.
RESULT_HEAD_LINES = 12
RESULT_TAIL_LINES = 8
RESULT_MAX_CHARS = 1500
ERROR_MAX_CHARS = 2500
TOOL_INPUT_CHARS = 300
HEADING_CHARS = 100
# Tools whose result only echoes what the agent already holds (a file's text, "file updated").
ECHO_TOOLS = frozenset({"Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "NotebookRead", "TodoWrite",
                        "Glob", "LS"})
ERROR_MARK = "[error] "
RESULT_MARKS = ("[output] ", ERROR_MARK)
# What the rendering puts before an output's first line (a tool's, a local command's, an API
# error's). Redaction reads the output without it (ingest/conversation.py): a shape known by its
# place on a line (a `.pgpass` line, `requirepass …`, a table's header) starts the output's line.
OUTPUT_MARKS = (*RESULT_MARKS, "[command output] ", "[system] ")
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


@dataclass
class Exchange:
    """One prompt and the work that answered it, as the lines [start_line, end_line] of the file."""

    kind: str                  # EXCHANGE or COMPACTION
    uuid: str                  # the line that opened it (the prompt, the task prompt, the summary)
    start_line: int            # 1-based, inclusive
    end_line: int
    timestamp: str | None
    branch: str | None
    prompt: str
    parts: list[str] = field(default_factory=list)   # rendered: answer text, tool calls, results
    uuids: list[str] = field(default_factory=list)   # every conversation line's uuid in it
    redacted: dict[str, int] = field(default_factory=dict)   # secrets taken out of it, by family
    # What the session showed that the text leaves out: every tool call's whole input (a Write's file,
    # an Edit's strings, a cut command) and an echo tool's result (a file Read). Never stored or
    # served; redaction reads it with the text, so a secret given away by its context there (an
    # `.env` the agent wrote) is redacted where the text repeats it (ingest/conversation.py).
    hidden: list[str] = field(default_factory=list)

    @property
    def heading(self) -> str:
        first = next((ln.strip() for ln in self.prompt.splitlines() if ln.strip()), "(empty prompt)")
        if self.kind == COMPACTION:
            return COMPACTION_HEADING
        return first if len(first) <= HEADING_CHARS else first[:HEADING_CHARS - 1].rstrip() + "…"

    def text(self, outputs: bool = True) -> str:
        """What the exchange reads as: a dated line, the prompt, then the work in file order.
        `outputs=False`: without the tools' ordinary output, errors kept (what is embedded: see
        ingest/conversation.py)."""
        when = _when(self.timestamp)
        head = " · ".join(x for x in (when, f"branch {self.branch}" if self.branch else "") if x)
        who = "Compaction summary" if self.kind == COMPACTION else "User"
        out = f"{who} ({head}):" if head else f"{who}:"
        out += "\n" + self.prompt.strip()
        for part in self.parts:   # a tool's output stays with its call: one block, one passage
            if part.startswith(RESULT_MARKS):
                if outputs or part.startswith(ERROR_MARK):
                    out += "\n" + part
            else:
                out += "\n\n" + part
        return out.rstrip() + "\n"


@dataclass
class Transcript:
    """A session file: who and where it is, its title, its exchanges, and what could not be read."""

    session_id: str | None = None
    agent_id: str | None = None        # a subagent (sidechain) file
    title: str | None = None
    cwd: str | None = None
    branch: str | None = None
    version: str | None = None
    started: str | None = None         # the first timestamp
    ended: str | None = None           # the last timestamp
    line_count: int = 0
    exchanges: list[Exchange] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)   # lines that are not JSON (skipped)
    redacted: dict[str, int] = field(default_factory=dict)   # secrets taken out of its title, cwd, branch


def _when(ts: str | None) -> str:
    """`Mon 19 Jan 2026 09:55 UTC`: the words a "when" question uses (weekday, month) are in the text."""
    if not ts:
        return ""
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts
    return t.strftime("%a %d %b %Y %H:%M UTC")


def text_of(content) -> str:
    """The text of a message's content: a string, or the `text` blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""


def is_typed_prompt(line: dict) -> bool:
    """A prompt a person typed: a `user` line with text that is not a tool result, a harness line
    (`isMeta`), a compaction summary, a slash-command echo or an interruption."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isCompactSummary"):
        return False
    content = (line.get("message") or {}).get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    t = text_of(content).strip()
    return bool(t) and not t.startswith(NOT_A_PROMPT)


def trim(text: str, max_chars: int = RESULT_MAX_CHARS) -> str:
    """Head and tail of a long output, with what was left out said."""
    text = _REMINDER_RE.sub("", text).strip()
    lines = text.splitlines()
    if len(lines) > RESULT_HEAD_LINES + RESULT_TAIL_LINES:
        cut = len(lines) - RESULT_HEAD_LINES - RESULT_TAIL_LINES
        lines = lines[:RESULT_HEAD_LINES] + [f"… ({cut} lines left out)"] + lines[-RESULT_TAIL_LINES:]
        text = "\n".join(lines)
    if len(text) > max_chars:
        half = max_chars // 2
        text = text[:half].rstrip() + f"\n… ({len(text) - max_chars:,} characters left out)\n" + text[-half:].lstrip()
    return text


def _tool_call(block: dict) -> str:
    """One line naming a tool call by what it acted on: the command, the file, the pattern, the task."""
    name = str(block.get("name") or "tool")
    inp = block.get("input") if isinstance(block.get("input"), dict) else {}
    if name == "Bash" and isinstance(inp.get("command"), str):
        return f"[Bash] $ {inp['command'][:TOOL_INPUT_CHARS]}"
    for key in ("file_path", "notebook_path", "path"):
        if isinstance(inp.get(key), str) and name in ECHO_TOOLS | {"Grep"}:
            extra = f" {inp['pattern']!r}" if isinstance(inp.get("pattern"), str) else ""
            return f"[{name}] {inp[key]}{extra}"
    if name in ("Task", "Agent"):
        what = inp.get("description") or inp.get("subagent_type") or ""
        prompt = inp.get("prompt") if isinstance(inp.get("prompt"), str) else ""
        return f"[Task: {what}] {prompt[:TOOL_INPUT_CHARS]}".rstrip()
    if name == "TodoWrite":
        todos = inp.get("todos") if isinstance(inp.get("todos"), list) else []
        items = [str(t.get("content")) for t in todos if isinstance(t, dict) and t.get("content")]
        return "[TodoWrite] " + "; ".join(items)[:TOOL_INPUT_CHARS]
    if isinstance(inp.get("pattern"), str):
        return f"[{name}] {inp['pattern'][:TOOL_INPUT_CHARS]}"
    if isinstance(inp.get("query"), str) or isinstance(inp.get("url"), str):
        return f"[{name}] {(inp.get('query') or inp.get('url'))[:TOOL_INPUT_CHARS]}"
    try:
        shown = json.dumps(inp, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        shown = ""
    return f"[{name}] {shown[:TOOL_INPUT_CHARS]}".rstrip()


def _tool_result(block: dict, tool: str | None, hidden: list[str] | None = None) -> str | None:
    """A tool result as the exchange keeps it, or None when it only echoes (a file read, "updated");
    what it leaves out goes to `hidden`."""
    body = block.get("content")
    text = body if isinstance(body, str) else text_of(body)
    if isinstance(body, list) and any(isinstance(b, dict) and b.get("type") == "image" for b in body):
        text = (text + "\n[image]").strip()
    error = bool(block.get("is_error"))
    if not error and tool in ECHO_TOOLS:
        if hidden is not None and text:
            hidden.append(text)
        return None
    text = trim(text, ERROR_MAX_CHARS if error else RESULT_MAX_CHARS)
    if not text:
        return None
    return ("[error] " if error else "[output] ") + text


def strip_marks(part: str) -> tuple[list[str] | None, str]:
    """An output part without its marks: (the mark each line started with, "" for none; the text),
    or (None, part) for a part that is not an output. A line may carry one: the results of one
    message are joined a line apart, each with its own."""
    if not part.startswith(OUTPUT_MARKS):
        return None, part
    marks, lines = [], []
    for line in part.split("\n"):
        mark = next((m for m in OUTPUT_MARKS if line.startswith(m)), "")
        marks.append(mark)
        lines.append(line[len(mark):])
    return marks, "\n".join(lines)


def restore_marks(marks: list[str] | None, text: str) -> str:
    """`text` (strip_marks's, redacted: its lines are the same lines) with each line's mark back."""
    if marks is None:
        return text
    lines = text.split("\n")
    return "\n".join((marks[i] if i < len(marks) else "") + line for i, line in enumerate(lines))


def split_lines(data: str) -> list[str]:
    """The file's lines, split at "\n" only: JSON text may hold U+2028 or a form feed unescaped
    (JavaScript writes them raw), which `str.splitlines` would also break a line at."""
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln.removesuffix("\r") for ln in lines]


def parse(data: str, path: str, subagent: bool = False, first_line: int = 1) -> Transcript:
    """The transcript in `data` (the file's text, or its tail from line `first_line` on: an
    exchange's first line). `subagent`: a sidechain file, whose first conversation line (the Task
    prompt) opens its first exchange."""
    tr = Transcript()
    tools: dict[str, str] = {}      # tool_use id → tool name, to judge its result
    cur: Exchange | None = None
    lines = split_lines(data)
    tr.line_count = first_line - 1 + len(lines)
    for n, raw in enumerate(lines, first_line):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            tr.bad_lines.append(n)
            continue
        if not isinstance(d, dict):
            continue
        if not isinstance(d.get("message"), dict):
            d["message"] = {}   # a line of another shape: what it says is read as nothing, never a crash
        kind = d.get("type")
        if kind in TITLE_TYPES:
            title = d.get("summary") or d.get("aiTitle") or d.get("title") or d.get("customTitle")
            if isinstance(title, str) and title.strip() and (kind != "summary" or tr.title is None):
                tr.title = title.strip()[:200]
            continue
        if kind not in ("user", "assistant", "system") or not isinstance(d.get("uuid"), str):
            continue   # bookkeeping (snapshots, queue operations, progress, …) and types not known yet
        _note_session(tr, d)
        opens = is_typed_prompt(d) or bool(d.get("isCompactSummary")) or (subagent and cur is None and kind == "user")
        if opens:
            if cur is not None:
                tr.exchanges.append(cur)
            msg = d.get("message") or {}
            cur = Exchange(kind=COMPACTION if d.get("isCompactSummary") else EXCHANGE, uuid=d["uuid"],
                           start_line=n, end_line=n, timestamp=_str(d.get("timestamp")),
                           branch=_str(d.get("gitBranch")) or None,
                           prompt=_REMINDER_RE.sub("", text_of(msg.get("content"))).strip())
            cur.uuids.append(d["uuid"])
            continue
        if cur is None:
            continue   # lines before the first prompt (a resumed session's system lines)
        cur.end_line = n
        cur.uuids.append(d["uuid"])
        part = _render(d, tools, cur.hidden)
        if part:
            cur.parts.append(part)
    if cur is not None:
        tr.exchanges.append(cur)
    return tr


def bad_line_warnings(path: str, bad_lines: list[int], count: int | None = None) -> list[str]:
    """The warnings for lines that are not JSON: the first three by number (never their text)."""
    count = len(bad_lines) if count is None else count
    out = [f"{path}: line {n} is not valid JSON; skipped" for n in bad_lines[:3]]
    if count > 3:
        out.append(f"{path}: {count} lines are not valid JSON; skipped")
    return out


def _str(v) -> str | None:
    return v if isinstance(v, str) else None


def _note_session(tr: Transcript, d: dict) -> None:
    for attr, key in (("session_id", "sessionId"), ("cwd", "cwd"), ("branch", "gitBranch"),
                      ("version", "version"), ("agent_id", "agentId")):
        if getattr(tr, attr) is None and isinstance(d.get(key), str) and d[key]:
            setattr(tr, attr, d[key])
    ts = _str(d.get("timestamp"))
    if ts:
        tr.started = tr.started or ts
        tr.ended = ts


def _hidden_input(block: dict) -> str:
    """A tool call's whole input, as the text shows its start: `[name] {json}`, then each string
    of it on lines of its own (a Write's file text reads as the file)."""
    inp = block.get("input")
    try:
        shown = json.dumps(inp, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return ""
    strings = [v for v in _strings(inp) if "\n" in v or len(v) > TOOL_INPUT_CHARS]
    return "\n".join([f"[{block.get('name') or 'tool'}] {shown}", *strings])


def _strings(obj, depth: int = 0):
    if isinstance(obj, str):
        yield obj
    elif depth < 32 and isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v, depth + 1)
    elif depth < 32 and isinstance(obj, list):
        for v in obj:
            yield from _strings(v, depth + 1)


def _render(d: dict, tools: dict[str, str], hidden: list[str] | None = None) -> str | None:
    """One conversation line inside an exchange, as the exchange's text shows it (or None)."""
    msg = d.get("message") or {}
    content = msg.get("content")
    if d.get("type") == "system":
        text = d.get("content") if isinstance(d.get("content"), str) else ""
        return f"[system] {trim(text, 500)}" if d.get("subtype") in ("api_error",) and text else None
    if d.get("type") == "assistant":
        out = []
        for b in content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                out.append(b["text"].strip())
            elif b.get("type") == "tool_use":
                if isinstance(b.get("id"), str):
                    tools[b["id"]] = str(b.get("name") or "")
                out.append(_tool_call(b))
                if hidden is not None:
                    hidden.append(_hidden_input(b))
        return "\n\n".join(out) or None
    # a user line inside an exchange: tool results, harness text, command echoes, interruptions
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        out = [r for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
               for tid in [b.get("tool_use_id")]
               for r in [_tool_result(b, tools.get(tid) if isinstance(tid, str) else None, hidden)] if r]
        return "\n".join(out) or None
    if d.get("isMeta"):
        return None
    text = _REMINDER_RE.sub("", text_of(content)).strip()
    stdout = re.search(r"<local-command-stdout>(.*?)</local-command-stdout>", text, re.DOTALL)
    if stdout:
        return f"[command output] {trim(stdout.group(1), 500)}" if stdout.group(1).strip() else None
    if text.startswith(("<command-name>", "<command-message>")):
        name = re.search(r"<command-name>(.*?)</command-name>", text)
        return f"[command] {name.group(1).strip()}" if name else None
    return text or None
