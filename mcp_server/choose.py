"""Which corpus a `remembrancer mcp` session serves.

The rule, in order:

1. `--root` in the registration: that corpus, always (`mcp config --root ~/notes` prints it in
   every line, so the one user-scope line reaches the notes from any project);
2. else the `roots` of the config file;
3. else the folder the client works in — the MCP client's roots (`roots/list`), else
   `CLAUDE_PROJECT_DIR`, else the working directory — but only if it is already an indexed corpus
   (someone ran `remembrancer index`/`search --root` on it, or it lies inside the roots of one:
   indexer/indexes.py). A folder is never indexed just because a client connected from it: a
   health check (`claude mcp list`) run in any folder must leave nothing behind;
4. else no corpus: every tool says which folders were considered and how to name one.

The home folder and `/` are never a corpus. Choosing reads only; the index is opened (and a
daemon started) at the first tool call, never at the handshake or tools/list (mcp_server/server.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from remembrancer.indexer import indexes
from remembrancer.indexer.config import Config, load_config, too_wide
from remembrancer.indexer.errors import UserError

HINT = ("register the server with your notes folder — `remembrancer mcp config --root ~/notes` prints the "
        "line (`remembrancer mcp --root ~/notes`) — or set roots = [\"~/notes\"] in the config file; to serve "
        "a project folder, index it once: `remembrancer index --root DIR`")


def paths_from_uris(uris) -> list[str]:
    """Local folders from `file://` root URIs (others are not ours to index)."""
    out = []
    for uri in uris:
        try:
            u = urlparse(str(uri))
        except ValueError:   # a malformed URI (an unclosed IPv6 bracket) names no folder; the others still count
            continue
        if u.scheme == "file" and u.netloc in ("", "localhost"):
            out.append(unquote(u.path))
    return out


def _usable(raw: list[str], label: str = "", refused: list[str] | None = None) -> list[Path]:
    """The folders that may be a corpus; why each other one was not is added to `refused`."""
    out = []
    for r in raw:
        p = Path(r).expanduser()
        if not p.is_dir():
            why = "is not a folder"
        elif wide := too_wide(p.resolve()):
            why = f"is {'the home folder' if wide == 'home' else '/'}, never taken as a corpus"
        else:
            out.append(p.resolve())
            continue
        if refused is not None:
            refused.append(f"{label}{r} {why}")
    return out


def choose_corpus(root_args: list[str] | None, client_roots: list[str] | None = None,
                  env: dict | None = None, cwd: str | None = None) -> tuple[Config, str]:
    """(the corpus config, where it came from); UserError when nothing names a corpus."""
    env = os.environ if env is None else env
    if root_args:
        return load_config(root_args), "--root"
    configured = load_config(None)
    if configured.roots:
        return configured, "the config file's roots"
    project = [env["CLAUDE_PROJECT_DIR"]] if env.get("CLAUDE_PROJECT_DIR") else []
    candidates = (("the MCP client's roots", "the MCP client's root ", client_roots or []),
                  ("CLAUDE_PROJECT_DIR", "CLAUDE_PROJECT_DIR=", project),
                  ("the working directory", "the working directory ", [cwd or os.getcwd()]))
    refused: list[str] = []
    for source, label, raw in candidates:
        dirs = _usable(raw, label, refused)
        if not dirs:
            continue
        # a client's roots may nest (a workspace and one of its folders): the outer one holds both
        dirs = [d for d in dict.fromkeys(dirs) if not any(o != d and d.is_relative_to(o) for o in dirs)]
        roots = indexes.corpus_for(dirs)
        if roots is not None:
            return load_config([str(r) for r in roots]), f"{source}, an indexed corpus"
        refused.append(f"{label}{', '.join(map(str, dirs))} is not an indexed corpus")
    raise UserError(f"no corpus to serve: no --root, no roots in the config file; {'; '.join(refused)}",
                    param="root", hint=HINT)
