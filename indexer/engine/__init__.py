"""One corpus's index kept in agreement with its files: a facade (facade.Engine) over the core,
the writer and per-request read views."""

from .facade import Engine
from .report import IndexReport
from .view import ReadView

__all__ = ["Engine", "IndexReport", "ReadView"]
