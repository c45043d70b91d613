"""Which build of remembrancer this process runs: its version and a fingerprint of its code.

A client and the daemon compare fingerprints (daemon/connect.py): after an upgrade, a daemon of the
old build must not answer the new build's clients as if it were theirs — it would serve what the
new build redacts, and judge freshness by the old rules.

The fingerprint is a digest of the package's own files as installed (every `.py` file and the
service templates, by their path inside the package and their bytes), not of the version string
nor of policy versions (REDACTOR_VERSION, the parser's, the index's): the version is not bumped for
every build, and a policy version is bumped only where someone remembered to — any change of code,
a bug fix in rendering, a new verdict, is another build. Paths are taken relative to the package, so a
wheel and a checkout of the same commit (an editable install maps the subpackages to the
repository's folders) have the same fingerprint.

It costs one walk and read of ~115 small files (~1.5 MB, ~5 ms), done once per process, on first
use: the daemon computes it when it starts, a client before it first talks to a daemon. Standard
library only, and no hashlib (its OpenSSL import costs ~4 ms): the Claude Code hook sends it with
its one request.

A process keeps the fingerprint of the code it loaded; `on_disk()` reads the files again, so a
long-running client (an MCP server started before an upgrade) can tell that it, not the daemon, is
the old build.
"""

from __future__ import annotations

import os

# Test-only: a fingerprint this process reports instead of its own, so a test can run a daemon
# that is "another build" without building two wheels. Never set it outside tests.
TEST_FINGERPRINT_ENV = "REMEMBRANCER_TEST_BUILD_FINGERPRINT"
SUBPACKAGES = ("indexer", "daemon", "hooks", "mcp_server", "cli", "systemd")
SUFFIXES = (".py", ".in")
LENGTH = 12   # hex digits shown and compared

_fingerprint: str | None = None


def fingerprint() -> str:
    """This process's build fingerprint (computed once)."""
    global _fingerprint
    if _fingerprint is None:
        _fingerprint = os.environ.get(TEST_FINGERPRINT_ENV) or on_disk()
    return _fingerprint


def version() -> str:
    """The installed distribution's version (importlib.metadata: ~35 ms, so only where it is shown)."""
    from remembrancer import __version__

    return __version__


def identity() -> dict:
    """What the daemon reports in its status and `--version` prints."""
    return {"version": version(), "fingerprint": fingerprint()}


def named(build: dict | None) -> str:
    """A build as a person reads it: "remembrancer 0.1.0 (build 1a2b3c4d5e6f)"; a daemon that reports
    none is older than build identities."""
    if not build or not build.get("fingerprint"):
        return "an older remembrancer (it reports no build)"
    return f"remembrancer {build.get('version') or '?'} (build {build['fingerprint']})"


def on_disk() -> str:
    """The fingerprint of the package's files as they are on disk now (not cached)."""
    try:
        from _blake2 import blake2b   # hashlib's own, without hashlib's import cost
    except ImportError:   # a Python built without it
        from hashlib import blake2b
    digest = blake2b(digest_size=16)
    for name, folder in _folders():
        for rel in _files(folder):
            try:
                with open(os.path.join(folder, rel), "rb") as f:
                    data = f.read()
            except OSError:
                continue
            path = f"{name}/{rel}" if name else rel
            digest.update(path.replace(os.sep, "/").encode("utf-8", "surrogateescape") + b"\0")
            digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:LENGTH]


def _folders() -> list[tuple[str, str]]:
    """(name inside the package, folder): the package's own folder and each subpackage's, wherever
    the install puts it (a wheel: inside the package; an editable install: the repository's folders)."""
    import importlib.util

    import remembrancer

    out = [("", os.path.dirname(os.path.abspath(remembrancer.__file__)))]
    for name in SUBPACKAGES:
        try:
            spec = importlib.util.find_spec(f"remembrancer.{name}")   # found, not imported
        except (ImportError, ValueError):
            spec = None
        locations = list(spec.submodule_search_locations or []) if spec else []
        if locations:
            out.append((name, locations[0]))
    return out


def _files(folder: str) -> list[str]:
    """The package files under `folder` (relative, sorted); the top folder's subpackage folders are
    left to their own entry, caches and anything else skipped."""
    out = []
    for here, dirs, files in os.walk(folder):
        top = here == folder
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith(".")
                         and not (top and d in SUBPACKAGES) and not d.endswith(".egg-info"))
        rel = os.path.relpath(here, folder)
        out += [f if rel == "." else os.path.join(rel, f) for f in sorted(files) if f.endswith(SUFFIXES)]
    return out
