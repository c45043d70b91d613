"""Two corpora for the scope differential: a full one served with a scope, and one holding only
the scoped files — with the history of the scoped files.

The full corpus (`<base>/full/mem`, a git repository) has `journal/` and `services/` (the
scope), `hosts/`,
`runbooks/`, the case look-alike `JOURNAL/` and the prefix look-alike `journal-archive/`, links
across them, symlinks from inside the scope to outside (and the other way), files with warnings
inside and outside, and a history of commits touching both sides (one on an unmerged branch).

The only-scoped corpus (`<base>/only/mem`) holds the scoped files, and its history is the full
history restricted to the scope — each commit's tree cut down to `journal/` and `services/`,
commits that change nothing there dropped, same authors, dates and messages (what
`git filter-repo --path journal/ --path services/` makes). Commit ids therefore differ; `ids` maps each full commit to its scoped twin, and the
comparison reads the only-scoped answers with their ids mapped back. Cited commits live in a
third repository (`app`, configured as `[verify] repos` in both), so the files' text is identical.

Below the corpora, the differential itself (the calls, the normalisation, the comparison): the
local scope test and the team store's role test run the same one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import anyio

from tests.support.env import GIT_IDENTITY

SCOPE = ("journal", "services")   # the scope: two folders

# (date, message, {path: text or None to delete}) — applied in order on main; "wip" branches off.
APP_COMMITS = [("2030-01-20T10:00:00+00:00", "app: pool size 40"), ("2030-01-21T10:00:00+00:00", "app: retry reads")]

HOST_DB1 = """---
host: db1
aliases: [pg-primary]
ips: [10.9.0.11]
tags: [database]
---
# db1

Primary PostgreSQL host. Replication to db2 streams WAL; replication lag is watched.
Backups run nightly with pgbackrest; a backup restore is tested monthly.
Replication replication replication: slots, lag, replay, backup, restore.
See [[2030-02-10]] for the last incident.
"""

HOST_PG1 = """---
host: pg1
tags: [database]
---
# pg1

Reporting replica. Replication lag alerts at 30 s. Backup restore drills run here.
Connection pool: too many clients happens under load; pool size 40.
"""

RUNBOOK = """# Restore a PostgreSQL backup

## Steps

1. Stop the service. 2. Restore the backup with pgbackrest. 3. Check replication.
Backup, restore, replication, replication lag: the words every runbook repeats.
After the restore read [the incident](../journal/2030-02-10.md).
"""

J10 = """# 2030-02-10 (Sun)

## db1 replication lag

Replication lag on [[db1]] reached 40 s during the nightly backup. Followed
[the restore runbook](../runbooks/restore.md) and [[2030-02-11]]. The pool fix is app@{app1}.

## Backup

The backup finished at 03:10; restore test skipped. Too many clients on pg1 at 03:05.
"""

J11 = """# 2030-02-11 (Mon)

## Follow-up

Raised the pool to 40 (app@{app2}); too many clients gone. Replication lag back under 1 s.
Back to [[2030-02-10#db1 replication lag]]; see also [[db1 log]] and [[pg1]].
"""

J_DB1_LOG = """# db1 log

Notes on db1 kept inside the journal: replication, backups, a restore once a quarter.
A link nobody can follow: [[no-such-page]]. Also [hosts](../hosts/db1.md).
"""

J_UNDATED = """---
tags: [ops, database]
---
# Pool sizing

Pool sizing for PostgreSQL: pool size 40 is enough; too many clients means a leak.
"""

J_BAD_YAML = """---
tags: [ops
---
# Broken front matter

This note has broken YAML front matter; it is still indexed. Replication.
"""

HOST_BAD_YAML = """---
host: [bad
---
# broken host

Outside file with broken front matter: a warning naming an outside path.
"""

UPPER = """# SHOUTED

UPPERCASE escape words: replication backup restore, JOURNAL folder differing only in case.
"""

ARCHIVE = """# 2029-12-01 (Sat)

## Archive

journal-archive look-alike: replication lag archived in December, backup restore.
"""

QUEUE = """---
service: queue
aliases: [pg-primary, mq]
tags: [ops]
---
# queue

The job queue (a service record inside the scope). Its alias pg-primary collides with the
db1 host's. Replication of the queue's state is nightly; the backup restore is untested.
"""

WIP = """# 2030-02-12 (Tue)

## Work in progress

Draft on a branch that never landed: replication tuning.
"""


def _git(repo: Path, *args: str, date: str | None = None, input: str | None = None) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo.parent),
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", **GIT_IDENTITY}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True,
                          input=input).stdout.strip()


def _write(root: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        p = root / rel
        if text is None:
            p.unlink()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def _commit(repo: Path, date: str, message: str, files: dict[str, str | None]) -> str:
    _write(repo, files)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message, date=date)
    return _git(repo, "rev-parse", "HEAD")


def build(base: Path) -> dict:
    """Make `<base>/app`, `<base>/full/mem`, `<base>/only/mem`; returns their facts."""
    app = base / "app"
    app.mkdir(parents=True)
    _git(app, "init", "-q", "-b", "main")
    app_ids = [_commit(app, d, m, {f"src/{i}.txt": m}) for i, (d, m) in enumerate(APP_COMMITS)]
    a1, a2 = app_ids[0][:10], app_ids[1][:10]

    full = base / "full" / "mem"
    full.mkdir(parents=True)
    _git(full, "init", "-q", "-b", "main")
    history = [
        ("2030-02-01T09:00:00+00:00", "hosts and runbooks",
         {"hosts/db1.md": HOST_DB1, "runbooks/restore.md": RUNBOOK}),
        ("2030-02-10T09:00:00+00:00", "journal: db1 replication lag; db1 record",
         {"journal/2030-02-10.md": J10.format(app1=a1), "hosts/db1.md": HOST_DB1 + "\nLag incident 2030-02-10.\n"}),
        ("2030-02-11T09:00:00+00:00", "journal follow-up, look-alike folders",
         {"journal/2030-02-11.md": J11.format(app2=a2), "journal/db1-log.md": J_DB1_LOG,
          "journal/pool.md": J_UNDATED, "journal/broken.md": J_BAD_YAML, "services/queue.md": QUEUE, "JOURNAL/shout.md": UPPER,
          "journal-archive/2029-12-01.md": ARCHIVE, "hosts/broken.md": HOST_BAD_YAML}),
        ("2030-02-12T09:00:00+00:00", "pg1 record (outside only)", {"hosts/pg1.md": HOST_PG1}),
    ]
    ids = [_commit(full, d, m, f) for d, m, f in history]
    _git(full, "checkout", "-q", "-b", "wip")
    wip = _commit(full, "2030-02-12T12:00:00+00:00", "wip: replication tuning draft",
                  {"journal/2030-02-12.md": WIP, "hosts/db1.md": HOST_DB1 + "\nwip\n"})
    _git(full, "checkout", "-q", "main")
    ids.append(wip)
    # Symlinks (untracked: a filtered history would keep a committed one as a dangling link).
    os.symlink("../hosts/db1.md", full / "journal" / "host-db1.md")        # inside → outside: not in scope
    os.symlink("2030-02-11.md", full / "journal" / "follow-up.md")         # inside → inside: one document
    os.symlink("../journal/2030-02-10.md", full / "hosts" / "incident.md")  # outside → inside

    only = base / "only" / "mem"
    only.mkdir(parents=True)
    mapping = _filtered_history(full, only, ["main", "wip"])
    os.symlink("2030-02-11.md", only / "journal" / "follow-up.md")
    return {"app": app, "app_ids": app_ids, "full": full, "only": only, "commits": ids, "ids": mapping}


def with_symlinks_committed(world: dict) -> dict:
    """The world for a team store, whose writer indexes commits only (indexer/committed.py): the
    symlinks `build` leaves untracked committed on each side, in one commit each (the same date
    and message), the full one mapped to the scoped one."""
    date, message = "2030-02-13T09:00:00+00:00", "symlinks"
    full, only = _commit(world["full"], date, message, {}), _commit(world["only"], date, message, {})
    return {**world, "ids": {**world["ids"], full: only}}


def _filtered_history(full: Path, only: Path, branches: list[str]) -> dict[str, str]:
    """Replay `full`'s history restricted to the scope into `only`: full commit id → scoped id."""
    mapping: dict[str, str] = {}
    image: dict[str, str | None] = {}   # full commit → its image (itself pruned: the nearest kept ancestor's)
    order = _git(full, "rev-list", "--topo-order", "--reverse", *branches).split()
    for c in order:
        parents = _git(full, "rev-list", "--parents", "-n", "1", c).split()[1:]
        parent_image = image[parents[0]] if parents else None
        entries = []
        for folder in SCOPE:
            try:
                entries.append(f"040000 tree {_git(full, 'rev-parse', f'{c}:{folder}')}\t{folder}\n")
            except subprocess.CalledProcessError:
                pass
        before = _git(full, "rev-parse", f"{parent_image}^{{tree}}") if parent_image else None
        tree = _git(full, "mktree", input="".join(entries))
        if tree == before or (parent_image is None and not entries):
            image[c] = parent_image
            continue
        msg = _git(full, "log", "-1", "--format=%B", c)
        date = _git(full, "log", "-1", "--format=%cI", c)
        new = _git(full, "commit-tree", tree, *(["-p", parent_image] if parent_image else []), "-m", msg, date=date)
        image[c] = new
        mapping[c] = new
    for b in branches:
        tip = image[_git(full, "rev-parse", b)]
        _git(full, "update-ref", f"refs/scoped/{b}", tip)
    _git(only, "init", "-q", "-b", "main")
    _git(only, "fetch", "-q", str(full), *(f"refs/scoped/{b}:refs/heads/{b}" for b in branches if b != "main"),
         "refs/scoped/main:refs/heads/main-fetched")
    _git(only, "checkout", "-q", "-B", "main", "main-fetched")
    _git(only, "branch", "-q", "-D", "main-fetched")
    for b in branches:
        _git(full, "update-ref", "-d", f"refs/scoped/{b}")
    return mapping


HEX_RE = re.compile(r"(?<![0-9a-f])[0-9a-f]{7,40}(?![0-9a-f])")


def map_ids_back(text: str, mapping: dict[str, str]) -> str:
    """Replace every (abbreviated) scoped commit id in `text` by the same-length abbreviation of
    the full commit it stands for."""
    back = {new: old for old, new in mapping.items()}

    def sub(m):
        h = m.group(0)
        hits = [new for new in back if new.startswith(h)]
        return back[hits[0]][: len(h)] if len(hits) == 1 else h
    return HEX_RE.sub(sub, text)


VOLATILE = {"index_dir", "took_ms", "last_indexed_at", "generation", "fulltext_generation", "vectors_generation",
            "seconds", "at", "started_at", "indexed_at", "pid", "socket", "clients", "requests", "idle_exit_s",
            "model_loads", "notifications", "last_notification"}


QUERIES = ["replication lag on db1", "backup restore", "too many clients", "how do I restore the database",
           "pool size 40", "uppercase escape words JOURNAL", "journal-archive December", "db1", "pg1 replication",
           "pgbackrest", "what happened on 2030-02-10", "Okta SSO login", "wip replication tuning draft",
           "broken front matter", "10.9.0.11", "pg-primary", "what happened to db1 last week?",
           "what happened on 10 February?"]


SCOPED_DOCS = ["journal/2030-02-10.md", "journal/2030-02-11.md", "journal/db1-log.md", "journal/pool.md",
               "journal/broken.md", "services/queue.md"]


OUTSIDE = ["hosts/db1.md", "JOURNAL/shout.md", "journal-archive/2029-12-01.md", "journal/host-db1.md",
           "runbooks/restore.md", "hosts/incident.md", "journal/follow-up.md", "Journal/2030-02-10.md"]


def calls_for(world) -> list[tuple[str, dict]]:
    """Representative arguments for every tool; commit ids are the full history's."""
    out: list[tuple[str, dict]] = [("index_status", {}), ("list_documents", {}), ("list_documents", {"path": "journal/"}),
                                   ("list_documents", {"type": "journal"}), ("list_documents", {"path": "hosts/"})]
    for q in QUERIES:
        out.append(("search", {"query": q}))
    out += [
        ("search", {"query": "replication", "limit": 10}),
        ("search", {"query": "replication", "type": "journal", "since": "2030-02-11"}),
        ("search", {"query": "backup", "tags": ["database"]}),
        ("search", {"query": "", "type": "journal"}),
        ("search", {"query": "", "tags": ["ops"]}),
        ("search", {"query": "too many clients", "exact": True}),
        ("search", {"query": "replication", "path": "journal/"}),
        ("search", {"query": "x", "type": "host"}),
        ("search", {"query": "x", "tags": ["nonexistent-tag"]}),
        ("latest", {"terms": ["replication"]}),
        ("latest", {"terms": "\"too many clients\" 40"}),
        ("latest", {"terms": ["db1", "pgbackrest"]}),
        ("latest", {"terms": ["UPPERCASE"]}),
        ("latest", {"terms": [world["app_ids"][0][:10]]}),
        ("latest", {"terms": ["replication"], "type": "journal", "since": "2030-02-11"}),
        ("history", {"entity": "db1"}),
        ("history", {"entity": "pg1", "topic": "replication"}),
        ("history", {"entity": "10.9.0.11"}),
        ("history", {"entity": "queue"}),
        ("history", {"entity": "pg-primary", "topic": "replication"}),
        ("history", {"entity": "mq", "since": "2030-02-11"}),
        ("search", {"query": "pg-primary replication", "limit": 8}),
        ("verify", {"text": f"fixed in app@{world['app_ids'][0][:10]} and {world['app_ids'][1][:7]}"}),
        ("verify", {"path": "journal/2030-02-10.md", "heading": "db1 replication lag"}),
        ("verify", {}),
    ]
    for c in world["commits"]:
        out.append(("verify", {"text": f"landed in {c[:12]}"}))
        out.append(("verify", {"text": c}))
        out.append(("latest", {"terms": [c[:10]]}))
    for p in SCOPED_DOCS:
        out += [("read", {"path": p}), ("read", {"path": p, "outline": True}), ("neighbors", {"path": p}),
                ("verify", {"path": p}), ("read", {"path": p, "lines": [1, 3]})]
    out.append(("read", {"path": "journal/2030-02-10.md", "heading": "Backup"}))
    for p in OUTSIDE:
        out += [("read", {"path": p}), ("neighbors", {"path": p}), ("verify", {"path": p})]
    return out


def to_scoped_ids(args: dict, mapping: dict[str, str]) -> dict:
    """The same question asked of the only-scoped corpus: a full commit id becomes its twin there."""
    text = json.dumps(args)
    for old, new in mapping.items():
        for n in (40, 12, 10, 7):
            text = text.replace(old[:n], new[:n])
    return json.loads(text)


def normalise(obj, world, which: str):
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True)
    if which == "only":
        text = map_ids_back(text, world["ids"])
    text = text.replace(str(world[which]), "<root>")
    text = re.sub(r"generation \d+", "generation N", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<time>", text)
    text = re.sub(r"\(\d+(\.\d+)? ?ms\)", "(<ms>)", text)
    # A corpus of only the scope, in a repository of its own, offers that repository's commits; a
    # scoped session refuses the commits by name (a message may speak of anything): not compared.
    text = re.sub(r"\\nAlso searchable: the commits of .*?with its hash\)\.", "", text)
    return _drop_volatile(json.loads(text))


def _drop_volatile(obj):
    if isinstance(obj, dict):
        return {k: ("<volatile>" if k in VOLATILE else _drop_volatile(v)) for k, v in obj.items() if k != "scope"}
    if isinstance(obj, list):
        return [_drop_volatile(v) for v in obj]
    if isinstance(obj, str) and obj.startswith("{") and obj.endswith("}"):
        try:  # a tool's text is JSON sometimes (errors): compare it as data
            return _drop_volatile(json.loads(obj))
        except ValueError:
            return obj
    return obj


def differences(a, b, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{where}.{k}: {'missing in scoped' if k not in a else 'missing in only-scoped'} "
                           f"({json.dumps(a.get(k, b.get(k)))[:160]})")
            else:
                out += differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [f"{where}: {len(a)} vs {len(b)} items"] if len(a) != len(b) else []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{where}[{i}]")
        return out
    if a != b:
        return [f"{where}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"]
    return []


def _run_all(server, calls):
    from mcp import Client

    async def go():
        async with Client(server) as c:
            tools = (await c.list_tools()).tools
            answers = []
            for name, args in calls:
                r = await c.call_tool(name, args)
                answers.append({"is_error": bool(r.is_error), "text": [x.text for x in r.content],
                                "structured": r.structured_content})
            return {t.name: {"description": t.description, "schema": t.input_schema} for t in tools}, answers
    return anyio.run(go)


@dataclass
class Differential:
    tools_a: dict
    tools_b: dict
    answers_a: list
    answers_b: list
    tool_diffs: list[str]
    per_call: list[list[str]]   # the differing fields of each call's two answers

    @property
    def diffs(self) -> list[str]:
        return self.tool_diffs + [d for call in self.per_call for d in call]


def run_differential(a, a_link, b, b_link, world, calls, map_ids: bool = True, clean=lambda x: x) -> Differential:
    """Every call through server `a` (the scoped one) and server `b` (a corpus of only the scoped
    files, asked with that corpus's ids unless `map_ids` is off), both links closed after; each pair
    of answers, and the tool lists (their descriptions hold the store's age), normalised (and
    `clean`ed) and compared field by field."""
    try:
        tools_a, answers_a = _run_all(a, calls)
        tools_b, answers_b = _run_all(b, [(n, to_scoped_ids(x, world["ids"]) if map_ids else x) for n, x in calls])
    finally:
        a_link.close()
        b_link.close()
    per_call = [differences(clean(normalise(x, world, "full")), clean(normalise(y, world, "only")),
                            f"{name}({json.dumps(args)})")
                for (name, args), x, y in zip(calls, answers_a, answers_b)]
    return Differential(tools_a, tools_b, answers_a, answers_b,
                        differences(clean(normalise(tools_a, world, "full")), clean(normalise(tools_b, world, "only")), "tools"),
                        per_call)
