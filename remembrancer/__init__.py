"""remembrancer: hybrid search (BM25 + embeddings) over a Markdown memory in git, served over MCP.

The one import name of the distribution. Its subpackages are the project's top-level folders
(`indexer/`, `daemon/`, `hooks/`, `mcp_server/`, `cli/`, `systemd/`), mapped in by
`pyproject.toml`: the checkout shows the product's layout, the wheel installs one package.
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("remembrancer")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"
