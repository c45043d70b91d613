"""Which corpus a `remembrancer mcp` session serves, so that one user-scope `claude mcp add` line
serves every project.

In order: `--root`; else the MCP client's roots (`roots/list`: the project the client opened);
else `CLAUDE_PROJECT_DIR`; else the roots of the config file. A project folder inside a configured
root means the configured corpus (not a corpus of its own); the home folder and `/` are never
taken as a corpus (indexing all of a home folder is never what a client meant).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from remembrancer.indexer.config import Config, load_config
from remembrancer.indexer.errors import UserError


def paths_from_uris(uris) -> list[str]:
    """Local folders from `file://` root URIs (others are not ours to index)."""
    out = []
    for uri in uris:
        u = urlparse(str(uri))
        if u.scheme == "file" and u.netloc in ("", "localhost"):
            out.append(unquote(u.path))
    return out


def _usable(raw: list[str]) -> list[Path]:
    home = Path.home().resolve()
    out = []
    for r in raw:
        p = Path(r).expanduser()
        if not p.is_dir():
            continue
        p = p.resolve()
        if p in (home, Path("/")):
            continue
        out.append(p)
    return out


def choose_corpus(root_args: list[str] | None, client_roots: list[str] | None = None,
                  env: dict | None = None) -> tuple[Config, str]:
    """(the corpus config, where it came from); UserError when nothing names a corpus."""
    env = os.environ if env is None else env
    if root_args:
        return load_config(root_args), "--root"
    configured = load_config(None)
    candidates = (("the MCP client's roots", client_roots or []),
                  ("CLAUDE_PROJECT_DIR", [env["CLAUDE_PROJECT_DIR"]] if env.get("CLAUDE_PROJECT_DIR") else []))
    for source, raw in candidates:
        dirs = _usable(raw)
        if not dirs:
            continue
        if configured.roots and all(any(d.is_relative_to(r.path) for r in configured.roots) for d in dirs):
            return configured, f"{source}, inside the configured corpus"
        return load_config([str(d) for d in dirs]), source
    if configured.roots:
        return configured, "the config file's roots"
    raise UserError("no corpus roots given: no --root, no MCP client roots, no CLAUDE_PROJECT_DIR and no "
                    "roots in the config file", param="root",
                    hint="pass --root DIR to `remembrancer mcp`, or set roots = [\"~/notes\"] in the config file")
