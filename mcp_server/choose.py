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

from remembrancer.indexer.config import Config, load_config, too_wide
from remembrancer.indexer.errors import UserError


def paths_from_uris(uris) -> list[str]:
    """Local folders from `file://` root URIs (others are not ours to index)."""
    out = []
    for uri in uris:
        u = urlparse(str(uri))
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
                  env: dict | None = None) -> tuple[Config, str]:
    """(the corpus config, where it came from); UserError when nothing names a corpus."""
    env = os.environ if env is None else env
    if root_args:
        return load_config(root_args), "--root"
    configured = load_config(None)
    project = [env["CLAUDE_PROJECT_DIR"]] if env.get("CLAUDE_PROJECT_DIR") else []
    candidates = (("the MCP client's roots", "the MCP client's root ", client_roots or []),
                  ("CLAUDE_PROJECT_DIR", "CLAUDE_PROJECT_DIR=", project))
    refused: list[str] = []
    for source, label, raw in candidates:
        dirs = _usable(raw, label, refused)
        if not dirs:
            continue
        # a client's roots may nest (a workspace and one of its folders): the outer one holds both
        dirs = [d for d in dict.fromkeys(dirs) if not any(o != d and d.is_relative_to(o) for o in dirs)]
        if configured.roots and all(any(d.is_relative_to(r.path) for r in configured.roots) for d in dirs):
            return configured, f"{source}, inside the configured corpus"
        return load_config([str(d) for d in dirs]), source
    if configured.roots:
        return configured, "the config file's roots"
    if refused:   # a project was named, but not one to index: say which and why, not "none given"
        raise UserError(f"no corpus to serve: {'; '.join(refused)}; and no --root, no roots in the config "
                        "file", param="root",
                        hint="pass --root with your notes folder to `remembrancer mcp` (e.g. `remembrancer mcp "
                             "--root ~/notes`), or set roots = [\"~/notes\"] in the config file")
    raise UserError("no corpus roots given: no --root, no MCP client roots, no CLAUDE_PROJECT_DIR and no "
                    "roots in the config file", param="root",
                    hint="pass --root DIR to `remembrancer mcp`, or set roots = [\"~/notes\"] in the config file")
