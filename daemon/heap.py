"""What the long-lived daemon does with its memory between passes (not the engine's concern:
a library must not change its host process's allocator or collector)."""

from __future__ import annotations

import gc


def release_memory() -> None:
    """Give freed heap back to the OS after an ingest: glibc keeps what embedding batches and
    parsing freed, so an idle daemon would otherwise sit at its indexing peak."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
        pass


def settle_heap() -> None:
    """After a full pass, take what the daemon keeps (modules, caches, the link resolver) out of
    the cyclic collector's way. Python's full collection walks every tracked object of the process:
    43 ms at 5,000 documents, ~60 ms at 20,000 — the slowest search of fifteen there, whichever
    request set it off. Frozen (gc.freeze), the next ones walk only what was made since (~1 ms).
    Unfrozen and collected first, so cycles the last pass left are still freed."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
