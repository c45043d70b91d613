"""Tell the daemon that HEAD moved in a work tree: the one thing a git hook runs.

Stdlib only, on purpose: the hook starts a fresh interpreter on every commit, checkout and merge,
so importing the engine (onnxruntime, tantivy, …) here would cost seconds of CPU for one line of
JSON. For the same reason the socket path is resolved here exactly as `indexer.config.socket_path`
does it, instead of importing it.

A notification is a hint, never a requirement: the daemon also watches files and rescans. So
`main` never fails and never prints — no daemon, a stale socket or a slow daemon must not disturb
a commit.

    python -m remembrancer.hooks.notify --root /path/to/work/tree --event post-commit
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import warnings

APP = "remembrancer"
DEFAULT_TIMEOUT_S = 0.5


def socket_path() -> str | None:
    """The daemon socket, as indexer.config.socket_path() resolves it; None if unknowable.

    platformdirs is only consulted when importable and XDG_RUNTIME_DIR is unset (it warns on
    stderr then; the warning is silenced because hooks must stay quiet).
    """
    env = os.environ.get("REMEMBRANCER_SOCKET")
    if env:
        return env
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime:
        try:
            import platformdirs
        except ImportError:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runtime = platformdirs.user_runtime_dir()
    return os.path.join(runtime, APP, "daemon.sock")


def notify(root: str, event: str, timeout: float = DEFAULT_TIMEOUT_S, path: str | None = None) -> bool:
    """Send one notify request; True if it was delivered, False if no (trusted) daemon took it.

    `timeout` bounds the whole exchange. The answer is read only until the deadline: it is
    waited for so the daemon does not write into a closed socket, not because it matters.
    A socket owned by another user is refused (as daemon.client does): it would learn our paths.
    """
    path = path or socket_path()
    if not path:
        return False
    deadline = time.monotonic() + timeout
    try:
        if os.stat(path).st_uid != os.getuid():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            request = {"id": 1, "method": "notify", "params": {"root": os.path.abspath(root), "event": event}}
            s.sendall((json.dumps(request, separators=(",", ":")) + "\n").encode("utf-8"))
            try:
                while (left := deadline - time.monotonic()) > 0:
                    s.settimeout(left)
                    chunk = s.recv(4096)
                    if not chunk or b"\n" in chunk:
                        break
            except OSError:
                pass  # sent is what counts; a slow answer is the daemon's business
            return True
    except OSError:
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
