"""remembrancer: hybrid search (BM25 + embeddings) over a Markdown memory in git, served over MCP.

The one import name of the distribution. Its subpackages are the project's top-level folders
(`indexer/`, `daemon/`, `hooks/`, `mcp_server/`, `cli/`, `systemd/`), mapped in by
`pyproject.toml`: the checkout shows the product's layout, the wheel installs one package.
"""



def __getattr__(name: str):
    """`__version__`, read from the installed metadata when asked for: importlib.metadata costs
    ~35 ms, which every git hook and Claude Code hook (they import this package) would pay."""
    if name != "__version__":
        raise AttributeError(f"module 'remembrancer' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("remembrancer")
    except PackageNotFoundError:  # imported from a checkout that was never installed
        return "0+unknown"
