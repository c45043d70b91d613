"""Claude Code session transcripts written by the tests, in the real line format.

The shapes follow what public readers of these files document (docs/conversations.md lists the
sources): one JSON object per line; `user` / `assistant` / `system` conversation lines carrying
`parentUuid`, `isSidechain`, `userType`, `cwd`, `sessionId`, `version`, `gitBranch`, `uuid` and
`timestamp`; an assistant response written one content block per line; tool results as
`tool_result` blocks in user lines; `summary` and `file-history-snapshot` bookkeeping lines; a
compaction as a `compact_boundary` system line and an `isCompactSummary` user line; a subagent's
file with `isSidechain: true` and `agentId` on every line.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from datetime import datetime, timedelta, timezone
from pathlib import Path


def slug(folder: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in folder)


class Session:
    """One session file, written line by line (append-only, as Claude Code writes it)."""

    def __init__(self, projects: Path, cwd: str = "/home/dev/code/app", *, session_id: str | None = None,
                 branch: str = "main", version: str = "2.1.29", start: str = "2026-03-02T09:00:00",
                 agent_id: str | None = None, new_layout: bool = True, parent: "Session | None" = None):
        self.session_id = session_id or (parent.session_id if parent else str(uuidlib.uuid4()))
        self.cwd, self.branch, self.version, self.agent_id = cwd, branch, version, agent_id
        folder = projects / slug(cwd)
        if agent_id is None:
            self.path = folder / f"{self.session_id}.jsonl"
        elif new_layout:
            self.path = folder / self.session_id / "subagents" / f"agent-{agent_id}.jsonl"
        else:
            self.path = folder / f"agent-{agent_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.t = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
        self.last: str | None = None
        self.uuids: list[str] = []

    @property
    def rel(self) -> str:
        return "/".join(self.path.parts[-(4 if self.agent_id and "subagents" in self.path.parts else 2):])

    def _stamp(self) -> str:
        self.t += timedelta(seconds=7)
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"

    def write(self, line: dict) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    def _line(self, kind: str, message: dict | None, **extra) -> str:
        u = str(uuidlib.uuid4())
        line = {"parentUuid": self.last, "isSidechain": self.agent_id is not None, "userType": "external",
                "cwd": self.cwd, "sessionId": self.session_id, "version": self.version, "gitBranch": self.branch,
                **({"agentId": self.agent_id} if self.agent_id else {}), "type": kind,
                **({"message": message} if message is not None else {}), "uuid": u, "timestamp": self._stamp(),
                **extra}
        self.write(line)
        self.last = u
        self.uuids.append(u)
        return u

    # -- what a session holds ------------------------------------------------------------------------
    def title(self, text: str) -> None:
        self.write({"type": "summary", "summary": text, "leafUuid": self.last or str(uuidlib.uuid4())})

    def prompt(self, text: str) -> str:
        """A typed prompt, after the file-history snapshot Claude Code writes before each."""
        u = str(uuidlib.uuid4())
        self.write({"type": "file-history-snapshot", "messageId": u,
                    "snapshot": {"messageId": u, "trackedFileBackups": {}, "timestamp": self._stamp()},
                    "isSnapshotUpdate": False})
        line = {"parentUuid": self.last, "isSidechain": self.agent_id is not None, "userType": "external",
                "cwd": self.cwd, "sessionId": self.session_id, "version": self.version, "gitBranch": self.branch,
                **({"agentId": self.agent_id} if self.agent_id else {}), "type": "user",
                "message": {"role": "user", "content": text}, "uuid": u, "timestamp": self._stamp()}
        self.write(line)
        self.last = u
        self.uuids.append(u)
        return u

    def _assistant(self, block: dict) -> str:
        return self._line("assistant", {"model": "claude-sonnet-4-5", "id": f"msg_{uuidlib.uuid4().hex[:24]}",
                                        "type": "message", "role": "assistant", "content": [block],
                                        "stop_reason": None, "stop_sequence": None,
                                        "usage": {"input_tokens": 10, "output_tokens": 20}},
                          requestId=f"req_{uuidlib.uuid4().hex[:24]}")

    def says(self, text: str) -> str:
        return self._assistant({"type": "text", "text": text})

    def thinks(self, text: str) -> str:
        return self._assistant({"type": "thinking", "thinking": text, "signature": "c2lnbmF0dXJl"})

    def tool(self, name: str, inp: dict, result: str, is_error: bool = False) -> str:
        """A tool call and its result (the result's line uuid is returned)."""
        tid = f"toolu_{uuidlib.uuid4().hex[:24]}"
        self._assistant({"type": "tool_use", "id": tid, "name": name, "input": inp})
        block = {"type": "tool_result", "tool_use_id": tid, "content": result}
        if is_error:
            block["is_error"] = True
        return self._line("user", {"role": "user", "content": [block]},
                          toolUseResult=("Error: " + result) if is_error else {"stdout": result, "stderr": ""})

    def meta(self, text: str) -> str:
        return self._line("user", {"role": "user", "content": text}, isMeta=True)

    def compact(self, summary: str, trigger: str = "auto") -> str:
        """A compaction: the boundary (a new chain root), then the summary line; the summary's uuid."""
        before = self.last
        self.last = None
        self._line("system", None, subtype="compact_boundary", content="Conversation compacted", level="info",
                   logicalParentUuid=before, compactMetadata={"trigger": trigger, "preTokens": 155000})
        return self._line("user", {"role": "user", "content": "This session is being continued from a previous "
                                   "conversation that ran out of context. The conversation is summarized below:\n"
                                   + summary}, isCompactSummary=True, isVisibleInTranscriptOnly=True)

    def raw(self, text: str) -> None:
        """A line as given (a torn write, a line of a type no reader knows yet)."""
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(text + "\n")
