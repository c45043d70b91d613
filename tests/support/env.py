"""The environment a test's remembrancer runs in (CLI, daemon, MCP server): its own data folder,
config file and socket, so nothing a test does reaches the user's indexes or daemon."""

from __future__ import annotations

import os
from pathlib import Path

# Who commits in the tests' git repositories (the git CLI refuses to commit without a name).
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def remembrancer_env(*, data: Path, config: Path, socket: Path, home: Path | None = None,
                     **more: str) -> dict[str, str]:
    """The three REMEMBRANCER_ variables (and `more`) on top of this process's environment; with
    `home`, on top of PATH and that HOME only — a user with nothing configured, nothing inherited."""
    base = dict(os.environ) if home is None else {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    return {**base, "REMEMBRANCER_DATA_DIR": str(data), "REMEMBRANCER_CONFIG": str(config),
            "REMEMBRANCER_SOCKET": str(socket), **more}
