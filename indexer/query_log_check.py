"""Whether the local query log (indexer/search/querylog.py) can be written: a log that cannot be
never fails a question, but it is said where config problems are — a warning on stderr from each
command that would log, `status`, `doctor`, and once per MCP session (mcp_server/server.py)."""

from __future__ import annotations

from remembrancer.indexer.config import Config, file_unwritable
from remembrancer.indexer.search.querylog import path_for

QUERY_LOG_HINT = "set [log] path to a file in a folder you can write, or [log] queries = false to turn the log off"


def query_log_problem(cfg: Config | None) -> str | None:
    """Why the query log this config asks for cannot be written (then no question is logged), or
    None (it can, or it is off)."""
    if cfg is None or not cfg.log_queries:
        return None
    return log_unwritable(path_for(cfg), "[log] path" if cfg.query_log else "the query log")


def log_unwritable(path, where: str = "the query log") -> str | None:
    """Why the query log at `path` cannot be written, said as every command says it, or None."""
    why = file_unwritable(path)
    return None if why is None else f"{where} {path} cannot be written ({why}): questions are not logged"
