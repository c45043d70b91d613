"""A memory corpus in git for the memory tools (history, latest, neighbors, verify).

examples/notes plus four more weeks of journal, a service record without a date, a failover
runbook full of links, a lesson and a plan item — committed with the git CLI at fixed dates, so
every SHA is the same on every machine. Next to it an `app` repository whose commits the journal
cites (`app@<sha>`): one landed, one amended away after it was cited, one on an unmerged branch.

    python -m tests.support.memory /tmp/memory-demo     # build it (docs/memory-tools.md uses it)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import EXAMPLES


def _env(when: str, home: Path) -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Ops Partner", "GIT_AUTHOR_EMAIL": "partner@example.com",
            "GIT_COMMITTER_NAME": "Ops Partner", "GIT_COMMITTER_EMAIL": "partner@example.com",
            "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "TZ": "UTC"}


def git(repo: Path, *args: str, when: str = "2030-01-01T12:00:00Z", home: Path | None = None,
        env: dict | None = None) -> str:
    e = _env(when, home or repo.parent)
    e.update(env or {})
    return subprocess.run(["git", *args], cwd=repo, env=e, check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout.strip()


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def commit(repo: Path, message: str, when: str) -> str:
    git(repo, "add", "-A", when=when)
    git(repo, "commit", "-q", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD")


def build_app(app: Path) -> dict:
    app.mkdir(parents=True)
    git(app, "init", "-q", "-b", "main")
    write(app, "app/settings.py", "DATABASE_URL = 'postgres://db1:5432/shop'\nCONN_MAX_AGE = None\n")
    initial = commit(app, "app: initial settings", "2030-01-15T12:00:00Z")
    write(app, "app/settings.py", "DATABASE_URL = 'postgres://db1:6432/shop'\nCONN_MAX_AGE = 600\n"
                                  "DISABLE_SERVER_SIDE_CURSORS = True\n")
    write(app, "app/workers.py", "BROKER_POOL_LIMIT = 4\n")
    workers = commit(app, "workers: connect through PgBouncer on 6432", "2030-01-21T10:00:00Z")
    write(app, "migrations/0042_orders_archived_at.py", "ALTER = 'ALTER TABLE orders ADD archived_at timestamptz'\n")
    amended_away = commit(app, "migrations: 0042 add orders.archived_at", "2030-02-10T09:00:00Z")
    write(app, "migrations/0042_orders_archived_at.py", "LOCK_TIMEOUT = '5s'\n"
                                                        "ALTER = 'ALTER TABLE orders ADD archived_at timestamptz'\n")
    git(app, "add", "-A", when="2030-02-10T15:00:00Z")
    # --amend keeps the author date and replaces the commit: the cited SHA stays in the object
    # database but is on no branch any more.
    git(app, "commit", "-q", "--amend", "--no-edit", when="2030-02-10T15:00:00Z",
        env={"GIT_AUTHOR_DATE": "2030-02-10T09:00:00Z"})
    migration = git(app, "rev-parse", "HEAD")
    git(app, "checkout", "-q", "-b", "feature/tls")
    write(app, "app/settings.py", "DATABASE_URL = 'postgres://db1:6432/shop?sslmode=require'\nCONN_MAX_AGE = 600\n"
                                  "DISABLE_SERVER_SIDE_CURSORS = True\n")
    tls = commit(app, "db: require TLS to db2", "2030-02-17T10:00:00Z")
    git(app, "checkout", "-q", "main")
    return {"app_initial": initial, "app_workers": workers, "app_amended_away": amended_away,
            "app_migration": migration, "app_tls": tls}


def build_notes(notes: Path, shas: dict) -> dict:
    shutil.copytree(EXAMPLES, notes)
    git(notes, "init", "-q", "-b", "main")
    j21 = notes / "journal/2030/2030-01-21.md"
    j21.write_text(j21.read_text().replace("app@4f2a9c1", f"app@{shas['app_workers'][:7]}"))
    write(notes, "journal/2030/2030-01-27.md", """# 2030-01-27 (Mon)

## 09:10 reports show yesterday's numbers

reports-db was 40 minutes behind db1 at 09:00; the nightly `pg_dump` holds a long snapshot and
replay waits for it. Nothing to do until the dump is replaced, see [[2030-q1-plan]].
""")
    out = dict(shas)
    out["notes_initial"] = commit(notes, "notes: January and early February", "2030-02-03T18:00:00Z")

    write(notes, "journal/2030/2030-02-10.md", f"""# 2030-02-10 (Sun)

## 10:00 migration 0042 started on pg-primary

Ran migration 0042 (`orders.archived_at`) from app@{shas['app_amended_away'][:7]} against 10.20.1.11. It
stopped after 30 s with

```
ERROR: canceling statement due to lock timeout
```

because a long report held a lock on `orders`. Will retry tonight with `--lock-timeout=5s`.

## 22:40 retry scheduled

Retry at 02:00 with `--lock-timeout=5s`; reports paused on reports-db meanwhile.
""")
    write(notes, "memory/migrations-lock-timeout.md", """---
tags: [postgres, migrations]
---

# Set lock_timeout before ALTER TABLE on busy tables

An `ALTER TABLE` waits for every running query on the table, and every new query waits behind
it: the app stalls. Set `lock_timeout` (`--lock-timeout=5s` for our migration runner) and retry
off-peak instead. Seen on [[2030-02-10]]: `ERROR: canceling statement due to lock timeout`.
""")
    out["notes_migration_started"] = commit(notes, "journal: migration 0042 started", "2030-02-10T18:00:00Z")

    write(notes, "journal/2030/2030-02-12.md", f"""# 2030-02-12 (Tue)

## 02:15 migration 0042 finished

The retry went through in 4 s on db1 with `--lock-timeout=5s`: `orders.archived_at` exists.
Final version of the migration is app@{shas['app_migration'][:10]} (the earlier one was amended).

## 15:00 pooler pool raised

pgbouncer `default_pool_size` 40 → 60 after the workers queued at peak; see [[pgbouncer]].
""")
    write(notes, "services/pgbouncer.md", """---
service: pgbouncer
aliases: [pooler]
tags: [postgres]
---

# PgBouncer

Runs on [[db1]] and pools every app connection to PostgreSQL.

## Settings

- `pool_mode = transaction`
- `default_pool_size = 60`
- listens on 6432

## Clients

Web and the Celery workers; read [the pooling lesson](../memory/pgbouncer-transaction-pooling.md)
before pointing a Django service at it.
""")
    out["notes_pooler"] = commit(notes, "pgbouncer record; migration finished", "2030-02-12T18:00:00Z")

    write(notes, "runbooks/postgres/failover.md", """---
title: Fail over to the replica
tags: [postgres, runbook]
---

# Fail over to the replica

When [[db1]] is gone for good, promote [[db2]] and move the pooler.

## Promote

1. Check replay lag on [[hosts/db2|the replica]]: under a minute.
2. `sudo -u postgres pg_ctlcluster 16 main promote` on db2.

## Move the pooler

Point [[pgbouncer]] at db2 (see [[db1#Services]] for the ports), then follow
[the restore runbook](restore.md#verify) to check the data. TLS: [[tls-setup]].
""")
    out["notes_failover"] = commit(notes, "runbook: failover", "2030-02-14T18:00:00Z")

    write(notes, "journal/2030/2030-02-17.md", f"""# 2030-02-17 (Mon)

## 14:00 TLS for reports-db

Started requiring TLS to db2: branch feature/tls at app@{shas['app_tls'][:7]}, not merged yet. The
failover runbook went in as {out['notes_failover'][:7]}. CI build 5e8d2c7f1a passed.
""")
    plan = notes / "planning/2030-q1-plan.md"
    plan.write_text(plan.read_text() + """
## 3. TLS everywhere

Require TLS from every client to db1 and db2 by the end of February.
""")
    out["notes_tls"] = commit(notes, "journal: TLS work; plan item", "2030-02-17T18:00:00Z")
    out["notes_readme_blob"] = git(notes, "rev-parse", "HEAD:README.md")
    return out


def build(base: Path) -> dict:
    """Build `<base>/app` and `<base>/notes`; returns their paths and every SHA worth citing."""
    base.mkdir(parents=True, exist_ok=True)
    shas = build_app(base / "app")
    shas = build_notes(base / "notes", shas)
    return {"base": base, "notes": (base / "notes").resolve(), "app": (base / "app").resolve(), "shas": shas}


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "memory-demo")
    if target.exists():
        sys.exit(f"{target} exists; pass a new folder")
    info = build(target)
    print(json.dumps({"notes": str(info["notes"]), "app": str(info["app"]), **info["shas"]}, indent=2))
