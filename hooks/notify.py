"""Tell the daemon that HEAD moved in a work tree: the one thing a git hook runs.

Stdlib only, on purpose: the hook starts a fresh interpreter on every commit, checkout and merge,
so importing the engine (onnxruntime, tantivy, …) here would cost seconds of CPU for one line of
JSON. The socket path, framing and client come from remembrancer.wire, which is stdlib-only for
this reason.

A notification is a hint, never a requirement: the daemon also watches files and rescans. So
`main` never fails and never prints — no daemon, a stale socket or a slow daemon must not disturb
a commit.

    python -m remembrancer.hooks.notify --root /path/to/work/tree --event post-commit
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from remembrancer import wire

DEFAULT_TIMEOUT_S = 0.5


def notify(root: str, event: str, timeout: float = DEFAULT_TIMEOUT_S, path: str | None = None) -> bool:
    """Send one notify request; True if it was delivered, False if no (trusted) daemon took it.

    `timeout` bounds the whole exchange. The answer is read only until the deadline: it is
    waited for so the daemon does not write into a closed socket, not because it matters.
    A socket owned by another user is refused (wire.Client refuses it): it would learn our paths.
    """
    try:
        path = path or wire.socket_path()
        with wire.Client(path, deadline=time.monotonic() + timeout) as client:
            client.send("notify", root=os.path.abspath(root), event=event)
        return True
    except (wire.DaemonUnavailable, wire.SocketPathTooLong, ImportError):   # ImportError: no platformdirs
        return False


def notify_store(url: str, event: str, timeout: float = DEFAULT_TIMEOUT_S) -> bool:
    """NOTIFY the team store's writer that the shared repository moved (indexer/store/postgres/notify.py);
    loaded only when a store is configured, so plain hooks stay stdlib-only."""
    try:
        from remembrancer.indexer.store.postgres.notify import notify_writer
    except Exception:  # noqa: BLE001 — hooks never fail
        return False
    return notify_writer(url, event, timeout)


def main(argv: list[str] | None = None) -> int:
    """`--root DIR --event NAME [--timeout S]`; always returns 0 and prints nothing."""
    try:
        parser = argparse.ArgumentParser(prog="remembrancer notify", add_help=True,
                                         description="Tell the remembrancer daemon that a work tree changed.")
        parser.add_argument("--root", default=os.getcwd(), help="work tree (default: current directory)")
        parser.add_argument("--event", default="manual", help="post-commit, post-merge, post-checkout, …")
        parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
        parser.add_argument("--store", default=os.environ.get("REMEMBRANCER_STORE") or None,
                            help="a team store's postgresql:// URL: notify its writer too")
        args, _ = parser.parse_known_args(argv)
        notify(args.root, args.event, args.timeout)
        if args.store:
            notify_store(args.store, args.event, max(args.timeout, 2.0))
    except SystemExit:  # argparse on bad input or --help: still not a failure of the hook
        pass
    except Exception:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
