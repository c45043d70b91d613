"""`remembrancer …` — the command line over the engine.

Exit codes scripts can trust: 0 ok; 1 a search found nothing strong; 2 bad input or setup (the
message says what to do); 3 no usable index (none built yet for read/outline/list — `index`, or
a first `search`, builds one, saying so on stderr — or a broken one); 70 an internal error (a
bug: re-run with --debug and report it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time

from remembrancer.indexer import requests as rq
from remembrancer.indexer.errors import UserError, scrubbed
from remembrancer.indexer.terms import one_line

EXIT_OK, EXIT_NOTHING, EXIT_USER, EXIT_INDEX, EXIT_BUG = 0, 1, 2, 3, 70
# The engine names its parameters in backticks; on the command line they are these flags.
FLAG_OF = {"`alternates`": "--also", "`exact`": "--exact"}
FIRST_INDEX_WAIT_S = 900.0   # a search waits this long for a daemon building a corpus's first index
STOP_WAIT_S = 30.0   # `stop` waits this long for the daemon's process to end
CONVERSATIONS_DAEMON_IDLE_S = 600.0   # a daemon a command started for conversations alone exits this idle

log = logging.getLogger("remembrancer")
RAW_STDOUT = ("mcp",)   # stdout is a protocol stream there, not a terminal

# C0 controls but newline and tab, DEL, C1 controls, and a CR that does not end a line: what lets a
# note's text move the cursor, recolour, retitle or clear the terminal, or write the clipboard
# (OSC 52). In human output they are shown as `\x1b`; in JSON as `\u009b` (json.dumps escapes C0
# already, but not DEL and C1 with ensure_ascii=False).
_CONTROLS = re.compile(r"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def terminal_safe(text: str, json_text: bool = False) -> str:
    """`text` with its control characters made visible (`\x1b`), or JSON-escaped (`\u001b`):
    the one function every line the CLI prints goes through (`SafeStream`)."""
    fmt = "\\u{:04x}" if json_text else "\\x{:02x}"
    return _CONTROLS.sub(lambda m: fmt.format(ord(m.group())), text)


class SafeStream:
    """sys.stdout / sys.stderr while a command runs: every write passes `terminal_safe`, so note
    text (search, read, latest, history …), error messages and logs cannot drive the terminal."""

    def __init__(self, stream, json_text: bool = False):
        self._stream = stream
        self._json = json_text
        self.unfiltered = stream   # for our own escapes (the progress bar), never for note text

    def write(self, text: str) -> int:
        self._stream.write(terminal_safe(text, self._json))
        return len(text)

    def __getattr__(self, name):   # flush, isatty, fileno, buffer, encoding …
        return getattr(self._stream, name)


def _add_root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", action="append", metavar="DIR",
                   help="corpus root (repeatable; default: roots from the config file)")


def _add_other_corpora(p: argparse.ArgumentParser, corpus: bool = False) -> None:
    """--conversations and --code (the other corpora beside the notes), and with `corpus` the choice."""
    p.add_argument("--conversations", action="append", metavar="DIR",
                   help="a folder of Claude Code transcripts, searched as its own corpus (repeatable; default: "
                        "[conversations] roots from the config file, else this project's ~/.claude/projects folder)")
    p.add_argument("--code", action="append", metavar="DIR",
                   help="a folder of source code, searched as its own corpus with --corpus code (repeatable; "
                        "default: [code] roots from the config file)")
    if corpus:
        p.add_argument("--corpus", choices=["notes", "conversations", "commits", "code", "all"] if corpus == "all"
                       else ["notes", "conversations", "commits", "code"], default="notes",
                       help="which corpus to read: the notes (default), the conversations, the commit messages "
                            "of the notes' git repositories, the source code (--code)"
                            + (", or notes, conversations and commits (all)" if corpus == "all" else ""))


def _load(args):
    """The configuration a command runs with: --root, --conversations and --code over the config file."""
    from remembrancer.indexer.config import load_config

    return load_config(getattr(args, "root", None), conversation_args=getattr(args, "conversations", None),
                       code_args=getattr(args, "code", None))


def _add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="URL", default=os.environ.get("REMEMBRANCER_STORE") or None,
                   help="team memory: a postgresql:// URL (default $REMEMBRANCER_STORE); see README 'Team memory'")


def _add_dates(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", help="section date on or after YYYY-MM-DD")
    p.add_argument("--until", help="section date on or before YYYY-MM-DD")


def _add_int(p, params: type[rq.Params], name: str, what: str, short: str | None = None) -> None:
    """An integer flag with the default and bounds its method declares (indexer/requests.py)."""
    default, lo, hi = params.bounds(name)
    flags = [f for f in (short, "--" + name.replace("_", "-")) if f]
    p.add_argument(*flags, type=int, default=default, help=f"{what}, {lo}–{hi} (default {default})")


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", action="append", default=[], help="doc type (repeatable: any of them)")
    p.add_argument("--path", help="path prefix inside the corpus, e.g. runbooks/")
    p.add_argument("--tag", action="append", default=[], dest="tags", help="front matter tag (repeatable: all of them)")
    _add_dates(p)


TERM_COMMANDS = ("search", "latest")   # the commands whose words may start with a dash (`latest -- --no-track`)


class _Parser(argparse.ArgumentParser):
    """argparse, with the fix for the one usage error agents make most: a search term that starts
    with a dash (`search --force-renewal`) is read as an option."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments: ") and message.split(": ", 1)[1].startswith("-"):
            term = message.split(": ", 1)[1]
            command = next((a for a in _ARGV if not a.startswith("-")), "")
            if command in TERM_COMMANDS:   # the command takes words: the term was meant as one
                message += f"\n  a term that starts with a dash goes after --: remembrancer {command} -- {term}"
                if command == "search":
                    message += f" (or quote it inside the question: \"what does {term} do\")"
            elif command:   # `status --corpus conversations`: an option this command does not take
                message += f"\n  `remembrancer {command} --help` lists the options it takes"
        super().error(without_typed_secrets(scrubbed(message)))   # "invalid int value: '<a typed token>'"


_ARGV: list[str] = []   # this run's command line: what an error may quote


def without_typed_secrets(obj):
    """An error (text or dict) without the pieces of the command line that the user's redaction
    policy removes: a value the secret-hash file lists need not look like a secret, so
    `scrubbed`'s patterns alone miss it (in lower case too, as some errors quote it)."""
    try:
        from remembrancer.indexer.api import echoes_redacted
        from remembrancer.indexer.config import load_config
        from remembrancer.indexer.redact_policy import RedactorSource

        redactor = RedactorSource(load_config(None, with_roots=False).redact).current()
    except Exception:   # no usable config or hash file (or an unreadable one): the patterns still applied
        return obj
    return echoes_redacted(redactor, obj, _ARGV, lowered=True)


class _Version(argparse.Action):
    """`--version`: the version and the build fingerprint of the installed code (remembrancer/build.py;
    the version alone is the same for every build of a release), read only when asked:
    importlib.metadata costs ~35 ms, which every command would pay."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, help="show the version and build, and exit"):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from remembrancer import build

        print(f"remembrancer {build.version()} (build {build.fingerprint()})")
        parser.exit()


JSON_HELP = "print the result as JSON instead of text"
LIST_LIMIT = 200   # `list`'s page (the socket's default)


def _add_mcp_options(p: argparse.ArgumentParser) -> None:
    """The options of `mcp` and of `mcp config` (which writes them into the registration)."""
    _add_store(p)
    _add_root(p)
    _add_other_corpora(p)
    p.add_argument("--install", action="store_true",
                   help="with config: merge the server into Claude Desktop's config file")
    p.add_argument("--desktop-config", metavar="FILE", help="with config --install: that file instead of "
                   "Claude Desktop's own")
    p.add_argument("--idle-exit", type=float, default=600.0, metavar="SECONDS",
                   help="idle timeout of a daemon started on demand")
    p.add_argument("--instructions", default="", help="text appended to the server description")
    p.add_argument("--scope", action="append", default=[], metavar="PREFIX",
                   help="only documents under this path prefix exist for the agent (repeatable)")


def mcp_config_parser() -> argparse.ArgumentParser:
    """`mcp config`'s own help: `config` is a positional of `mcp` (so `mcp --root DIR` keeps serving),
    not a subcommand, and argparse alone would print the server's."""
    p = _Parser(prog="remembrancer mcp config",
                description="Print the `claude mcp add` line and the Claude Desktop JSON that register the MCP "
                            "server with this machine's absolute paths and these options; with --install, also "
                            "merge the server into Claude Desktop's config file (other servers kept).")
    _add_mcp_options(p)
    return p


class _McpHelp(argparse.Action):
    """-h of `mcp`: config's help once `config` was read (`mcp config --help`), else the server's."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        (mcp_config_parser() if getattr(namespace, "action", None) == "config" else parser).print_help()
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="remembrancer", description="Hybrid search over a Markdown memory.")
    ap.add_argument("--debug", action="store_true", help="verbose logs and tracebacks on stderr")
    ap.add_argument("--version", action=_Version)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", help="index (or incrementally update) the corpus")
    _add_store(p)
    _add_root(p)
    _add_other_corpora(p)
    p.add_argument("--reembed", action="store_true", help="drop stored vectors and embed everything again")
    p.add_argument("--json", action="store_true", help="the run's report as JSON")

    p = sub.add_parser("search", help="hybrid search: the best section in full, pointers to the rest")
    _add_store(p)
    # Words, not one argument: an agent's unquoted `search how do I restore` is the question it means.
    p.add_argument("query", nargs="*", default=[], help="the question, quoted or not (may be empty when filters "
                   "are given)")
    _add_root(p)
    _add_other_corpora(p, corpus="all")
    _add_filters(p)
    _add_int(p, rq.SearchParams, "limit", "how many results", "-n")
    p.add_argument("--exact", action="store_true", help="literal string match only (error strings, paths, IDs)")
    p.add_argument("--explain", action="store_true", help="show why each result ranked where it did")
    p.add_argument("--also", action="append", default=[], metavar="PHRASING",
                   help="a rephrasing searched with the question, in the words the notes would use (up to 3)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("read", help="print one section, a line range, or a page of a document")
    _add_store(p)
    p.add_argument("path", help="the document: its corpus path (hosts/db1.md), or an absolute or "
                   "cwd-relative path inside a root")
    _add_root(p)
    _add_other_corpora(p, corpus="one")
    p.add_argument("--uuid", help="a conversation: the exchange holding this line (a search result's uuid)")
    p.add_argument("--around", type=int, default=0, help="a conversation: also this many exchanges before and after")
    p.add_argument("--heading", help="breadcrumb, or a unique trailing part of it")
    p.add_argument("--lines", help="START:END (1-based, inclusive)")
    p.add_argument("--offset", type=int, default=rq.ReadParams.bounds("offset")[0],
                   help="first character of the page (a page's next_offset)")
    _add_int(p, rq.ReadParams, "max_chars", "page size")
    p.add_argument("--json", action="store_true", help="the JSON contract instead of text")

    p = sub.add_parser("outline", help="a document's sections with line ranges and sizes")
    _add_store(p)
    p.add_argument("path")
    _add_root(p)
    _add_other_corpora(p, corpus="one")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("status", help="what is indexed, with which model, and how fresh")
    _add_store(p)
    _add_root(p)
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("list", help="documents in the index, by path prefix and type")
    _add_store(p)
    _add_root(p)
    _add_other_corpora(p, corpus="one")
    p.add_argument("--path", help="path prefix")
    p.add_argument("--type", action="append", default=[], help="doc type (repeatable: any of them)")
    p.add_argument("--offset", type=int, default=0, metavar="N", help="skip the first N documents (paging)")
    p.add_argument("--limit", type=int, default=LIST_LIMIT, metavar="N",
                   help=f"at most N documents (default {LIST_LIMIT}, at most 5000)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("serve", help="run the daemon in the foreground (the service runs this)")
    _add_store(p)
    _add_root(p)
    _add_other_corpora(p)
    p.add_argument("--idle-exit", type=float, default=None, metavar="SECONDS",
                   help="exit after this long without clients (default: never; a daemon started on demand "
                        "passes 600)")
    p.add_argument("--rescan", type=float, default=600.0, metavar="SECONDS",
                   help="periodic full rescan interval (default 600)")
    p.add_argument("--pull-every", type=float, default=60.0, metavar="SECONDS",
                   help="with --store: git fetch + fast-forward and index this often (default 60; SIGHUP: now)")
    p.add_argument("--corpus-idle", type=float, default=900.0, metavar="SECONDS",
                   help="a corpus without requests this long releases its memory (default 900; reopened on demand)")

    p = sub.add_parser("stop", help="stop the daemon serving this socket")

    p = sub.add_parser("notify", help="tell the daemon something changed (used by the git hooks); with --store, "
                                      "the team store's writer (PostgreSQL NOTIFY): it pulls and indexes now")
    _add_store(p)
    p.add_argument("--root", help="work tree that changed")
    p.add_argument("--event", default="manual")

    p = sub.add_parser("hooks", help="install or remove the git hooks that notify the daemon")
    hs = p.add_subparsers(dest="hooks_command", required=True, metavar="{install,uninstall}")
    for name, what in (("install", "add post-commit, post-merge, post-checkout and post-rewrite hooks to REPO "
                                   "(a hook already there is kept and runs first; core.hooksPath is respected)"),
                       ("uninstall", "remove them from REPO (a hook that was there before is put back)")):
        hp = hs.add_parser(name, help=what, description=what)
        hp.add_argument("repo", help="a git work tree")
        hp.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("mcp", help="MCP server on stdio (for Claude Code / Claude Desktop); "
                       "`mcp config` prints how to register it", add_help=False)
    p.add_argument("-h", "--help", action=_McpHelp, help="show this help message and exit "
                   "(`mcp config --help`: config's)")
    p.add_argument("action", nargs="?", choices=["config"],
                   help="config: print the `claude mcp add` line and the Claude Desktop JSON")
    _add_mcp_options(p)

    p = sub.add_parser("corpora", help="list the indexed corpora (roots, documents, size, last used, served?); "
                       "`corpora forget NAME|PATH` deletes one's index (never the notes)")
    p.add_argument("action", nargs="?", choices=["list", "forget"], default="list")
    p.add_argument("corpus", nargs="?", metavar="NAME|PATH", help="forget: a NAME as listed, or one of its roots")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("serve-http", help="serve the MCP tools over HTTP (streamable HTTP) to bearer-token "
                       "holders: a team store's reader (--store) or this machine's corpus (--root)")
    _add_store(p)
    _add_root(p)
    _add_listen(p)
    p.add_argument("--instructions", default="", help="text appended to the server description")

    p = sub.add_parser("team", help="team store administration: scoped reader roles (row-level security), "
                       "tokens of the HTTP endpoint")
    ts = p.add_subparsers(dest="team_command", required=True, metavar="ACTION")
    tp = ts.add_parser("grant-reader", help="create or update a login role that reads this store: only these "
                       "prefixes (--scope), or all of it (--all)")
    tp.add_argument("role")
    tp.add_argument("--scope", action="append", default=[], metavar="PREFIX",
                    help="a folder of the corpus the role may read (repeatable; added to what it has)")
    tp.add_argument("--all", action="store_true", dest="everything", help="the role reads the whole store")
    tp.add_argument("--password-stdin", action="store_true", help="set the role's password from stdin (one line)")
    tp = ts.add_parser("revoke-reader", help="take prefixes from a scoped role (without --scope: the role reads "
                       "nothing of this store)")
    tp.add_argument("role")
    tp.add_argument("--scope", action="append", default=[], metavar="PREFIX")
    tp = ts.add_parser("readers", help="list the store's readers (and the prefixes of the scoped ones)")
    for tp in ts.choices.values():
        _add_store(tp)
        tp.add_argument("--json", action="store_true", help=JSON_HELP)
    tp = ts.add_parser("token", help="bearer tokens of `serve-http` on this machine: create (printed once), "
                       "revoke, list")
    tp.add_argument("token_action", choices=["create", "revoke", "list"])
    tp.add_argument("name", nargs="?", help="create/revoke: the token's name (who holds it)")
    tp.add_argument("--scope", action="append", default=[], metavar="PREFIX",
                    help="create: a folder the token may read (repeatable; none: everything)")
    tp.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("claude-hooks", help="install or remove the Claude Code hooks (memory for strong "
                       "matches on each prompt, a freshness line at session start)")
    cs = p.add_subparsers(dest="claude_hooks_command", required=True, metavar="{install,uninstall}")
    for name, what in (("install", "add the UserPromptSubmit and SessionStart hooks to Claude Code's settings "
                                   "(every other setting is kept)"),
                       ("uninstall", "remove them (every other setting is kept)")):
        cp = cs.add_parser(name, help=what, description=what)
        cp.add_argument("--settings", metavar="FILE", help="Claude Code settings file (default: "
                        "~/.claude/settings.json, the user scope)")
        cp.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("uninstall", help="remove what remembrancer installed — the Claude Code hooks, its MCP "
                       "registrations, the service, the git hooks, the daemon (--purge: the indexes and the query "
                       "log too); never your notes")
    p.add_argument("--purge", action="store_true",
                   help="also delete every index in the data dir (derived data) and the query log")
    p.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    p.add_argument("--settings", metavar="FILE", help="Claude Code settings file (default: ~/.claude/settings.json)")
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="another repository whose git hooks to remove (the known corpora's are found)")

    p = sub.add_parser("service", help="install the daemon as a systemd user unit / launchd agent")
    ss = p.add_subparsers(dest="service_command", required=True, metavar="{install,uninstall}")
    for name, what in (("install", "write the systemd --user unit (Linux) or launchd agent (macOS) for the "
                                   "daemon, then enable and start it"),
                       ("uninstall", "stop, disable and remove every unit it installed: the daemon's, a writer's, the HTTP "
                                     "endpoint's (the index stays: `corpora forget` deletes it)")):
        sp = ss.add_parser(name, help=what, description=what)
        _add_root(sp)
        sp.add_argument("--no-start", action="store_true", help="write the unit but do not enable/start it")
        if name == "install":
            sp.add_argument("--print", action="store_true", dest="dry_run",
                            help="print the unit (or plist) it would write, and change nothing")
            sp.add_argument("--store", metavar="URL", help="the team store's writer instead: its own unit "
                            "running `serve --store URL --root CHECKOUT`, restarted when it fails")
            sp.add_argument("--pull-every", type=float, metavar="SECONDS", help="with --store: the writer's pull interval")
            sp.add_argument("--http", action="store_true", help="the HTTP endpoint instead: its own unit running "
                            "`serve-http` (of the team store with --store, else of --root's corpus)")
            _add_listen(sp)

    p = sub.add_parser("doctor", help="check install, model, socket, hooks, service, inotify limits")
    _add_store(p)
    _add_root(p)
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    from remembrancer.cli.secrets_cmd import add_parser as add_secrets_parser

    add_secrets_parser(sub)

    p = sub.add_parser("history", help="everything about one host/service, newest first (time, not relevance)")
    _add_store(p)
    p.add_argument("entity", help="name, alias or IP from a host/service record")
    _add_root(p)
    p.add_argument("--topic", help="only the sections about this, still in date order")
    _add_dates(p)
    _add_int(p, rq.HistoryParams, "limit", "how many sections, newest first", "-n")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("latest", help="sections containing ALL the terms, newest first (exact, no ranking)")
    _add_store(p)
    p.add_argument("terms", nargs="+", help="exact strings: SHAs, --flags (after --), error text, numbers")
    _add_root(p)
    _add_other_corpora(p, corpus="one")
    _add_dates(p)
    p.add_argument("--type", action="append", default=[], help="doc type (repeatable: any of them)")
    p.add_argument("--path", help="path prefix inside the corpus")
    _add_int(p, rq.LatestParams, "limit", "how many sections, newest first", "-n")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("neighbors", help="links out, backlinks, broken links and unlinked similar sections")
    _add_store(p)
    p.add_argument("path")
    _add_root(p)
    _add_int(p, rq.NeighborsParams, "limit", "how many unlinked similar sections", "-n")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("verify", help="check the commit SHAs a document cites (or text on stdin) in git")
    p.add_argument("path", nargs="?", help="a document; omit and pass --text (or - to read stdin)")
    _add_root(p)
    p.add_argument("--heading", help="only this section of the document")
    p.add_argument("--text", help="text to scan instead of a document ('-' reads stdin)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("report", help="summarise the local query log: most asked, abstentions, slow queries")
    p.add_argument("--log", help="query log file (default: [log] path, or the data dir's logs/queries.jsonl)")
    p.add_argument("--since", help="only entries on or after YYYY-MM-DD")
    p.add_argument("--slow-ms", type=float, default=1000.0, help="what counts as slow")
    p.add_argument("--top", type=int, default=10, help="rows per list")
    p.add_argument("--json", action="store_true", help=JSON_HELP)

    p = sub.add_parser("eval", help="score retrieval on a labelled query set (JSONL)")
    p.add_argument("queries", help="a .jsonl query file (see ../shared/eval/README.md)")
    _add_root(p)
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--misses", action="store_true", help="list every miss")
    p.add_argument("--corpus", choices=["notes", "commits", "code"], default="notes",
                   help="score the notes (default), the commits of the roots' git repositories, or the roots "
                        "read as source code")
    p.add_argument("--compare", choices=["rerank"],
                   help="score twice on one index: the configured [rerank] off, then on")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    for p in sub.choices.values():   # `search … --debug` works as well as `--debug search …`
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return ap


def _warn_store_password(args, argv: list[str]) -> None:
    """A password in a store URL on the command line is seen by every user of the machine (`ps`),
    and commands that install something would write it into files: said once, with the way out."""
    url = getattr(args, "store", None)
    if not url or not any(a == "--store" or a.startswith("--store=") for a in argv):
        return
    from remembrancer.indexer.store.postgres.store import has_password

    if has_password(url):
        print("remembrancer: warning: the store URL holds a password, which other users of this machine see "
              "in `ps`; keep it in ~/.pgpass (or $PGPASSWORD) and leave it out of the URL", file=sys.stderr)


def _check_store(args) -> None:
    """A --store given (or $REMEMBRANCER_STORE) is a PostgreSQL URL that parses, checked before a
    command acts on it: an empty one would otherwise mean "no store" and index locally, and a
    malformed one fail deep inside. The stdio MCP server says it in its answers instead (its client
    must get an `initialize` answer to show anything): mcp_server/server.py."""
    url = getattr(args, "store", None)
    if url is None or (args.command == "mcp" and getattr(args, "action", None) != "config"):
        return
    from remembrancer.indexer.store.postgres.store import check_url

    check_url(url)


def _warn_root_after_dashes(argv: list[str]) -> None:
    """After `--` every word is a term: `latest -- --flag --root X` searches for "--root" and "X"."""
    if "--" in argv:
        after = argv[argv.index("--") + 1:]
        if any(a == "--root" or a.startswith("--root=") for a in after):
            print("remembrancer: warning: --root after -- is taken as a search term, not a corpus root; "
                  "put --root before --", file=sys.stderr)


def _warn_missing_config() -> None:
    """A config file named by REMEMBRANCER_CONFIG that is not there: said, not silently replaced by
    the defaults (a typo would lose the roots and the model). A warning, not an error: pointing it at
    a file not written yet is how scripts and tests run with the defaults, isolated from ~/.config."""
    path = os.environ.get("REMEMBRANCER_CONFIG")
    if path and not os.path.exists(path):
        print(f"remembrancer: warning: REMEMBRANCER_CONFIG names {path}, which does not exist; using the "
              "defaults (no configured roots)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _ARGV[:] = argv
    _warn_root_after_dashes(argv)
    args = build_parser().parse_args(argv)
    _warn_missing_config()
    _warn_store_password(args, argv)
    if args.command in RAW_STDOUT:
        return _main(args)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(sys.stdout, json_text=getattr(args, "json", False)), SafeStream(sys.stderr)
    try:
        return _main(args)
    finally:
        sys.stdout, sys.stderr = saved


def _main(args) -> int:
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    from remembrancer.indexer import writelock

    writelock.identify(by=args.command)   # an index this run writes names it to whoever waits (`serve`: the daemon)
    try:
        _check_store(args)
        return COMMANDS[args.command](args)
    except UserError as e:
        _error(args, e)
        return EXIT_INDEX if e.code in ("no_index", "index_broken") else EXIT_USER
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug: one line by default, the traceback with --debug
        from remembrancer.indexer.store.local.catalog import is_damage, store_fault
        from remembrancer.indexer.config import data_dir

        from remembrancer.daemon.watch_limit import is_watch_limit, limit_report

        limit = is_watch_limit(e)   # inotify's ENOSPC is its watch limit, never a full disk
        if limit is None:
            fault = store_fault(e, data_dir())
        else:
            said = limit_report(limit)
            fault = UserError(f"cannot watch the notes' folders: {said.message}", code="watch_limit", hint=said.fix)
        if fault is not None and not args.debug:   # a full or read-only disk, or the watch limit: the user's to fix
            _error(args, fault)
            return EXIT_USER
        if is_damage(e):  # found mid-run (the open-time probe passed): the documented exit code
            print(f"remembrancer: the index catalog is damaged ({e}) — run `remembrancer index`: it moves "
                  "a damaged catalog aside and rebuilds it from the files", file=sys.stderr)
            return EXIT_INDEX
        if args.debug:
            raise
        print(f"remembrancer: internal error: {type(e).__name__}: {scrubbed(str(e))} (re-run with --debug for details)",
              file=sys.stderr)
        return EXIT_BUG


def _error(args, e: UserError) -> None:
    if getattr(args, "json", False):
        print(json.dumps({"error": without_typed_secrets(e.to_dict())}, ensure_ascii=False))
    said = without_typed_secrets(str(e))
    for name, flag in FLAG_OF.items():
        said = said.replace(name, flag)
    print(f"remembrancer: {said}", file=sys.stderr)


def _backend(args, missing: str = "ok"):
    """The daemon if one runs; else the engine in-process, refreshed first.

    With no index built yet: `missing="build"` says on stderr that it is built now — in-process
    with a progress bar, or by the daemon, waited for — "error" refuses with exit 3 (reads have
    nothing to read), "status" too unless the daemon already holds that corpus (its first pass is
    under way): status creates nothing, with a daemon or without one; "ok" goes on.
    An index whose last pass did not finish is finished first, in-process, saying so."""
    from remembrancer.daemon.connect import connect, find_daemon, running_daemon, wait_for_first_index

    if getattr(args, "store", None):   # a reader of the team store: no local index
        return connect(None, store=args.store, root_args=args.root, start=False, readonly_fallback=False)
    config = _load(args)
    if not config.roots and config.conversations:
        if missing in ("build", "error"):
            return _conversations_daemon(config)
        if missing == "status" and running_daemon() is None:
            raise UserError("no daemon running: conversations alone are indexed and served by the daemon",
                            code="no_index", hint="a search starts one (remembrancer search --conversations DIR "
                                                  "--corpus conversations WORDS), or run `remembrancer serve`")
    if missing == "ok" or not config.roots or (config.index_dir() / "catalog.sqlite3").exists():
        backend = connect(config, start=False, readonly_fallback=False, progress=_progress_bar())
        if missing in ("build", "error") and backend.kind == "local" and not backend.readonly \
                and backend.engine.unfinished_pass():
            print(f"remembrancer: the last indexing pass over {', '.join(str(r.path) for r in config.roots)} "
                  "did not finish: finishing it now", file=sys.stderr)
        return backend
    where = ", ".join(str(r.path) for r in config.roots)
    daemon = find_daemon(config)
    if missing == "status" and daemon is not None and _daemon_holds(daemon, config):
        return daemon
    if missing in ("error", "status"):
        if daemon is not None:
            daemon.close()
        raise UserError(f"no index yet for {where}", code="no_index",
                        hint="build it with `remembrancer index " + " ".join(f"--root {r.path}" for r in config.roots)
                             + "` (or run a search: it builds one)")
    if daemon is None:
        backend = connect(config, start=False, readonly_fallback=False, progress=_progress_bar())
        # said once connected: while another run builds it, connect raises that instead (writelock)
        print(f"remembrancer: no index yet for {where}: building it now (only this once; `remembrancer "
              "serve` or the service keeps it fresh)", file=sys.stderr)
        backend.first_build = True   # its pass's warnings are printed as `index` prints them (_memory_call)
        return backend
    print(f"remembrancer: no index yet for {where}: the daemon is building it now; waiting for it",
          file=sys.stderr)
    wait_for_first_index(daemon, timeout_s=FIRST_INDEX_WAIT_S)
    return daemon


def _conversations_daemon(config):
    """Conversations alone (no notes folder) are indexed and answered by the daemon only, as for an
    MCP session: the one running, else one started now that exits when idle, said on stderr."""
    from remembrancer.daemon.connect import connect, running_daemon

    if running_daemon() is None:
        print("remembrancer: conversations alone are answered by the daemon: starting one now (it exits after "
              f"{CONVERSATIONS_DAEMON_IDLE_S / 60:.0f} minutes without clients; `remembrancer serve` or the service "
              "keeps one running)", file=sys.stderr)
    return connect(config, start=True, readonly_fallback=False, idle_exit_s=CONVERSATIONS_DAEMON_IDLE_S)


def _daemon_holds(daemon, config) -> bool:
    """Whether the daemon already serves the corpus of `config` (open or remembered): asking it
    about one it does not hold would open, create and index it."""
    index = str(config.index_dir())
    return any(c.get("index_dir") == index for c in daemon.status_at_connect.get("corpora") or [])


def corpus_path(path: str, root_args, backend=None) -> str:
    """A document path as the index names it: absolute and cwd-relative paths inside a root are
    turned into root-relative ones (corpus paths pass through unchanged). The roots are those of
    the corpus that answers: given or configured, else the daemon's default corpus (`backend`)."""
    from pathlib import Path

    from remembrancer.indexer.config import load_config

    p = Path(path).expanduser()
    if not p.is_absolute() and not p.exists():
        return path   # a corpus path as search prints it
    try:
        roots = load_config(root_args).roots or served_roots(backend)
        real = p.resolve()
    except (UserError, OSError):
        return path
    for r in roots:
        if real.is_relative_to(r.path):
            rel = real.relative_to(r.path).as_posix()
            return rel if len(roots) == 1 else f"{r.name}/{rel}"
    if p.is_absolute():
        if not roots:
            raise UserError(f"{path}: no corpus root is known to resolve it against (no --root, no roots in "
                            "the config file, and the daemon has no default corpus)", param="path",
                            hint="pass --root DIR, the folder of notes that holds it")
        raise UserError(f"{path} is not inside a corpus root ({', '.join(str(r.path) for r in roots)})",
                        param="path", hint="pass a path inside a root, or the path as search prints it")
    return path


def served_roots(backend) -> list:
    """The roots of the daemon's default corpus, when `backend` is a daemon asked for no corpus
    of its own (no --root, no configured roots): its answers name paths relative to those."""
    from pathlib import Path

    from remembrancer.indexer.config import Root

    if getattr(backend, "kind", None) != "daemon" or backend.roots:
        return []
    listed = backend.status_at_connect.get("roots") or backend.call("status").get("roots") or []
    return [Root(r["name"], Path(r["path"])) for r in listed if isinstance(r, dict) and r.get("path")]


PLAIN_PROGRESS_EVERY_S = 10.0   # without a terminal: one progress line this often


class _PlainProgress:
    """Progress for a log, a pipe, CI or `nohup` (stderr is not a terminal): one plain line on stderr
    every PLAIN_PROGRESS_EVERY_S — files done of all, passages embedded, rate, time left. A run
    shorter than that prints none; stdout keeps only the command's answer."""

    def __init__(self):
        self.t0 = self.last = time.monotonic()
        self.report = None   # the run's IndexReport, set by the writer (its passages so far)

    def __call__(self, done: int, total: int, path: str) -> None:
        now = time.monotonic()
        if now - self.last < PLAIN_PROGRESS_EVERY_S or done > total:
            return
        self.last = now
        rate = done / max(now - self.t0, 1e-6)
        left = (total - done) / rate if rate > 0 else 0
        passages = f", {self.report.embedded:,} passages embedded" if self.report is not None else ""
        eta = f"{left / 60:.0f} min" if left >= 90 else f"{left:.0f} s"
        print(f"indexing: {done:,} of {total:,} files ({100 * done // max(total, 1)}%){passages}, "
              f"{rate:.1f} files/s, about {eta} left", file=sys.stderr, flush=True)


def _progress_bar():
    """A rich progress bar on stderr that appears only when there is real work (> ~1 s); rich is
    imported then (a daemon's answer needs no bar). Without a terminal, plain lines instead
    (_PlainProgress): a bar drawn into a log is nothing but escapes, and rich draws none there."""
    if not sys.stderr.isatty():
        return _PlainProgress()
    state: dict = {"bar": None, "t0": time.monotonic()}

    def update(done: int, total: int, path: str) -> None:
        if state["bar"] is None:
            if time.monotonic() - state["t0"] < 1.0 or done >= total:   # quick, or done: no bar (it drew a blank line)
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            bar = Progress(TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                           TextColumn("{task.fields[path]}", style="dim"),   # rich passes ESC and C1 through
                           console=Console(file=getattr(sys.stderr, "unfiltered", sys.stderr)), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("index", total=total, path="")
        state["bar"].update(state["task"], completed=done, path=one_line(path[-50:]))
        if done >= total:
            state["bar"].stop()

    return update


# -- commands --------------------------------------------------------------------------------------

def cmd_index(args) -> int:
    from remembrancer.indexer.config import load_config

    if args.store:   # one pass of the team store's writer (refused while `serve --store` runs)
        from remembrancer.indexer.team import Writer

        writer = Writer(_load(args), args.store)
        report = writer.pass_once(progress=_progress_bar(), reembed=args.reembed).to_dict()   # as `serve` does: pull, index
    else:
        config = _load(args)
        embedder = _model_folder_embedder(config)   # a broken [model] path is refused before any pass
        report = _index_by_daemon(config, args.reembed)
        if report is None:
            report = _index_writer(config, embedder).refresh(progress=_progress_bar(), reembed=args.reembed).to_dict()
            for name, other in (("conversations", config.conversation_config()), ("code", config.code_config())):
                if other is not None:
                    same = embedder if other.model == config.model else None
                    report[name] = _index_writer(other, same).refresh(progress=_progress_bar(),
                                                                      reembed=args.reembed).to_dict()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        skipped = f", {report['skipped']} skipped (see the warnings)" if report["skipped"] else ""
        print(f"{report['scanned']} files: {report['added']} added, {report['updated']} updated, "
              f"{report['removed']} removed, {report['unchanged']} unchanged{skipped}; "
              f"{report['embedded']} passages embedded in {report['seconds']:.2f}s"
              + (f"; {report['waiting']} wait for their vectors" if report.get("waiting") else ""))
        _print_warnings(report["warnings"])
        for name, unit in (("conversations", "transcripts"), ("code", "files")):   # the corpora beside the notes
            other = report.get(name)
            if other:
                print(f"{name}: {other['scanned']} {unit}: {other['added']} added, {other['updated']} updated, "
                      f"{other['removed']} removed, {other['unchanged']} unchanged; {other['embedded']} "
                      f"passages embedded in {other['seconds']:.2f}s")
                _print_warnings(other["warnings"])
    return EXIT_OK


def _model_folder_embedder(config):
    """The model of a configured `[model] path`, loaded (None for the packaged model or a server).
    A folder that holds no usable model (a file missing, a graph onnxruntime refuses, a wrong
    `dim`) is a setup error: indexing on would leave every passage waiting for a vector that no
    later run can give, and exit 0."""
    from remembrancer.indexer.config import config_path, model_path_hint
    from remembrancer.indexer.models.embed import ModelError, load_embedder_from_dir
    from remembrancer.indexer.models.spec import INT8_SPEC

    if not isinstance(config.model, str) or config.model in ("default", INT8_SPEC):
        return None
    try:
        return load_embedder_from_dir(config.model)
    except ModelError as e:
        raise UserError(f"the model folder {config.model} ([model] path) cannot be used: {e}", code="bad_model",
                        param="model.path", hint=model_path_hint(config_path())) from None


def _print_warnings(warnings: list[str]) -> None:
    """An indexing pass's warnings on stderr, the first 20."""
    for w in warnings[:20]:
        print(f"warning: {one_line(w)}", file=sys.stderr)
    if len(warnings) > 20:
        print(f"warning: … and {len(warnings) - 20} more (see `remembrancer status`)", file=sys.stderr)


def _index_by_daemon(config, reembed: bool) -> dict | None:
    """A daemon serving this data dir is the one writer of its indexes: it does the
    pass and this waits for it. None when no daemon runs."""
    from remembrancer.wire import DaemonUnavailable
    from remembrancer.daemon.connect import find_daemon
    from remembrancer.indexer.config import socket_path

    if not config.roots:
        return None   # the engine refuses it with its own message
    daemon = find_daemon(config)
    if daemon is None:
        return None
    pid = (daemon.status_at_connect.get("daemon") or {}).get("pid", "?")
    where = ", ".join(str(r.path) for r in config.roots)
    try:
        if reembed:
            env = "" if daemon.sock == socket_path() else f"REMEMBRANCER_SOCKET={daemon.sock} "
            raise UserError(f"`index --reembed` cannot run while the daemon (pid {pid}) writes the index of {where}",
                            code="index_busy", hint=f"stop it with `{env}remembrancer stop` and run it again "
                                                    "(the daemon starts again on demand)")
        print(f"remembrancer: the running daemon (pid {pid}) is indexing {where}; waiting for its pass",
              file=sys.stderr)
        daemon.client.timeout = None   # a first pass over a large corpus takes what it takes
        out = daemon.call("reindex", wait=True)
    except DaemonUnavailable as e:
        raise UserError(f"the daemon (pid {pid}) stopped answering before its pass ended ({e})",
                        code="no_daemon", hint="run `remembrancer index` again") from None
    finally:
        daemon.close()
    print(f"remembrancer: indexed by the running daemon (pid {out.get('pid', pid)})", file=sys.stderr)
    for name in ("conversations", "code"):
        if out.get(name):
            out["report"][name] = out[name]["report"]
    return out["report"]


def _index_writer(config, embedder=None):
    """The engine of this corpus, writable: its writer lock taken first — waited for, with a
    line saying who holds it, while another `index` (or a daemon that does not answer) writes."""
    from remembrancer.indexer import writelock
    from remembrancer.indexer.engine import Engine

    if not config.roots:
        return Engine(config)   # refused there with its message

    def waiting(other: dict | None) -> None:
        print(f"remembrancer: {writelock.describe(other)} is writing the index of "
              f"{', '.join(str(r.path) for r in config.roots)}; waiting for it to finish", file=sys.stderr)

    index_dir = config.index_dir()
    index_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    held = writelock.acquire(index_dir / writelock.WRITER_LOCK, "the index", wait=waiting)
    try:
        return Engine(config, embedder=embedder)   # takes its own count of the lock this process now holds
    finally:
        held.release()


def cmd_search(args) -> int:
    out = _memory_call(args, "search", query=" ".join(args.query), limit=args.limit, type=args.type, path=args.path,
                       tags=args.tags, since=args.since, until=args.until, exact=args.exact,
                       explain=args.explain, corpus=args.corpus, **({"alternates": args.also} if args.also else {}))
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print_search(out)
    return EXIT_OK if out["results"] else EXIT_NOTHING


def print_search(out: dict) -> None:
    from remembrancer.indexer.answers import SearchAnswer
    from remembrancer.mcp_server.render import search_terminal_text

    print(search_terminal_text(SearchAnswer.parse(out)))


def cmd_read(args) -> int:
    lines = None
    if args.lines:
        try:
            a, b = args.lines.split(":")
            lines = (int(a), int(b))
        except ValueError:
            raise UserError(f"--lines must be START:END, got {args.lines!r}", param="lines") from None
    backend = _backend(args, missing="error")
    talk = {"corpus": args.corpus, **({"uuid": args.uuid} if args.uuid else {}),
            **({"around": args.around} if args.around else {})}
    path = args.path if args.corpus in ("conversations", "code") else corpus_path(args.path, args.root, backend)
    out = backend.call("read", path=path, heading=args.heading, lines=lines, offset=args.offset,
                       max_chars=args.max_chars, **talk)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        from remembrancer.indexer.answers import Page, freshness_line

        page = Page.parse(out)
        print(freshness_line(page.index), file=sys.stderr)   # stdout is the text, verbatim
        print(page.content)
        if page.truncated:
            print(f"\n[… {page.total_chars - page.offset - page.returned_chars} more chars; "
                  f"continue with --offset {page.next_offset}]", file=sys.stderr)
    return EXIT_OK


def cmd_outline(args) -> int:
    backend = _backend(args, missing="error")
    path = args.path if args.corpus in ("conversations", "code") else corpus_path(args.path, args.root, backend)
    out = backend.call("outline", path=path, corpus=args.corpus)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        from remembrancer.indexer.answers import Outline, freshness_line

        o = Outline.parse(out)
        print(freshness_line(o.index))
        print(f"{one_line(o.path)} ({o.type}, {o.date or 'undated'}, ~{o.total_tokens} tokens)")
        for s in o.sections:
            indent = "  " * max(s.level - 1, 0)
            print(f"{indent}{s.heading.split(' > ')[-1] or '(preamble)'}  "
                  f"[{s.lines[0]}-{s.lines[1]}, ~{s.tokens} tokens]")
    return EXIT_OK


def _nothing_named(args) -> bool:
    """Whether a command was given no corpus to work on: no --root, none configured, no --store,
    no conversations, and no daemon running to answer for whatever it serves."""
    from remembrancer.daemon.connect import running_daemon

    if getattr(args, "store", None):
        return False
    config = _load(args)
    return not config.roots and not config.conversations and running_daemon() is None


def cmd_status(args) -> int:
    from remembrancer.indexer.answers import StatusAnswer
    from remembrancer.indexer.config import shown_root

    from remembrancer import build
    from remembrancer.daemon.connect import OtherBuild, restart_hint, this_build

    if _nothing_named(args):   # no root, no store, no daemon: what there is to ask about
        if not args.json:
            print("no corpus given and no daemon running (`remembrancer status --root PATH` tells a corpus's "
                  "freshness); the indexes here:")
        return _print_corpora(args, None)
    try:
        backend = _backend(args, missing="status")
        raw = backend.call("status")
        other = getattr(backend, "other_daemon", None)   # a daemon of another build, left running (connect)
    except OtherBuild as e:   # nothing to answer from in-process: the daemon's own status, flagged
        backend, raw = None, e.status
        other = raw
    query_log = _query_log_problem(args)
    if query_log and not args.json:
        print(f"remembrancer: warning: {query_log}", file=sys.stderr)
    if args.json:
        if query_log:
            raw = {**raw, "query_log_problem": query_log}
        if getattr(backend, "kind", None) != "team":
            raw = {**raw, "client_build": this_build()}
            if other is not None:
                raw["other_build_daemon"] = {**(other.get("daemon") or {}), "fix": restart_hint(other.get("daemon") or {})}
        print(json.dumps(raw, indent=2, ensure_ascii=False))
        return EXIT_OK
    out = StatusAnswer.parse(raw)
    st, d = out.index, out.daemon
    if other is not None:
        od = other.get("daemon") or {}
        print(f"daemon: pid {od.get('pid')} on {od.get('socket')} runs {build.named(od.get('build'))}, "
              f"NOT this {build.named(this_build())}: not used"
              + (" (answered in-process, read-only)" if other is not raw else ""))
        print(f"  fix: {restart_hint(od)}")
        if other is raw:   # the rest is that daemon's own view, by the old build's rules: not shown
            return EXIT_OK
    elif d:
        print(f"daemon: up, pid {d.pid} on {d.socket}; {d.clients} clients, {d.requests} requests, "
              f"model loaded {d.model_loads}x; queue {d.queued_changes}"
              + (f"; last error: {d.last_error}" if d.last_error else ""))
        print(f"daemon build: {build.named(d.build)}"
              + ("" if (d.build or {}).get("fingerprint") == build.fingerprint() else
                 f", NOT this {build.named(this_build())}"))
    elif st is not None and st.store.get("kind") == "postgresql":
        print("daemon: none (a reader of the team store)")
    else:
        print("daemon: not running (answered in-process)")
    if out.corpora:
        print(f"corpora served by the daemon ({len(out.corpora)}):")
        for c in out.corpora:
            fr = c.freshness
            state = "" if c.state == "open" else f" ({c.state}: memory released, reopened on demand)"
            print(f"  {one_line(', '.join(c.roots))}: {(fr and fr.verdict) or '?'}, "
                  f"{fr.documents if fr and fr.documents is not None else '?'} documents{state}")
            if st is None or c.index_dir != st.index_dir:   # the one named is listed in full below
                if fr and fr.verdict == "stale" and fr.reason:   # e.g. its root moved, or is a link to elsewhere now
                    print(f"    stale: {one_line(fr.reason)}")
                if c.polled:
                    print(f"    polled: {one_line(c.polled.get('message', ''))}")
                for w in c.warnings or []:
                    print(f"    warning: {one_line(w)}")
    if st is None:   # no corpus named and no default one: the daemon's view only
        return EXIT_OK
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.last_indexed_at)) if st.last_indexed_at else "never"
    fr = out.freshness
    why = fr and (fr.reason or fr.detail)
    print(f"freshness: {(fr and fr.verdict) or '?'}" + (f" — {why}" if why else ""))
    if st.store.get("kind") == "postgresql":
        print(f"store: {st.store['url']} (schema {st.store['schema_version']}, keyword ranking "
              f"{st.store['keyword_ranking']})")
    else:
        print(f"index: {st.index_dir}")
    for r in st.roots:
        head = ""
        if r.head_current:
            same = r.head_indexed == r.head_current
            head = f"  HEAD {r.head_current[:10]} ({'indexed' if same else 'NOT indexed yet'})"
        gone = f"  UNAVAILABLE: it {r.unavailable}" if r.unavailable else ""
        print(f"root {one_line(r.name)}: {one_line(shown_root(r.path))}{head}{gone}")
    print(f"{st.documents} documents, {st.sections} sections, {st.passages} passages, "
          f"{st.vectors} vectors; generation {st.generation}; last indexed {when}")
    m = st.model
    where = "from an embedding server" if m and m.get("pooling") == "server" else f"sha256 {(m or {}).get('model_sha256', '')[:12]}…"
    print(f"model: {m['name']} ({m['dim']} dims, {where})" if m else "model: none yet")
    if st.vectors_waiting:
        print(f"waiting: {st.vectors_waiting} passage texts have no vector yet (keyword search only for them)")
    polled = d.polled if d else None
    if polled:   # inotify's limit: the daemon polls the roots it cannot watch
        print(f"polled: {one_line(polled.get('message', ''))}:")
        for r in polled.get("roots") or []:
            print(f"  {one_line(r)}")
        print(f"  fix: {one_line(polled.get('fix', ''))}")
    for w in st.warnings:
        print(f"warning: {one_line(w)}")
    return EXIT_OK


def cmd_eval(args) -> int:
    from remembrancer.indexer.search.evaluate import format_report, run_eval

    from pathlib import Path

    if not Path(args.queries).exists() and "shared/eval" in args.queries:
        raise UserError(f"{args.queries} not found: the evaluation query sets live in ../shared/eval, beside the "
                        "checkout, and are not part of this repository", param="queries",
                        hint="put them there, or pass a labelled query file of your own (.jsonl or .yaml)")
    if args.compare == "rerank":
        from remembrancer.indexer.search.evaluate import compare_rerank, format_compare

        report = compare_rerank(args.queries, args.root, limit=args.limit, corpus=args.corpus)
        text = lambda: format_compare(report, misses=args.misses)
    else:
        report = run_eval(args.queries, args.root, limit=args.limit, corpus=args.corpus)
        text = lambda: format_report(report, misses=args.misses)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else text())
    return EXIT_OK


def _memory_call(args, tool: str, **params) -> dict:
    """One question (search or a memory tool) through the backend, written to the local query log."""
    from remembrancer.indexer.config import load_config
    from remembrancer.indexer.search.querylog import QueryLog

    backend = _backend(args, missing="build")
    settings = _load(args)
    qlog = QueryLog.for_config(settings)
    _warn_query_log(settings)
    t0 = time.perf_counter()
    try:
        out = backend.call(tool, **params)
        if getattr(backend, "first_build", False) and getattr(backend, "last_report", None):
            _print_warnings(backend.last_report.warnings)
    except UserError as e:
        if qlog is not None:
            qlog.record(tool, params, None, (time.perf_counter() - t0) * 1000, error=e.to_dict(), client="cli")
        raise
    if qlog is not None:
        qlog.record(tool, params, out, (time.perf_counter() - t0) * 1000, client="cli")
    return out


def _warn_query_log(settings) -> None:
    """A query log that cannot be written is said (once: one command, one warning), not skipped silently."""
    from remembrancer.indexer.query_log_check import query_log_problem

    problem = query_log_problem(settings)
    if problem:
        print(f"remembrancer: warning: {problem}", file=sys.stderr)


def _query_log_problem(args) -> str | None:
    """What `status` says of the query log: why it cannot be written, or None (a config that does
    not load is its own error, said by the commands that need it)."""
    from remembrancer.indexer.query_log_check import query_log_problem

    try:
        return query_log_problem(_load(args))
    except UserError:
        return None


# The memory tools' text is written for an agent calling MCP tools; on a terminal it names commands.
MCP_TO_CLI = (("read(path, heading)", "`remembrancer read PATH --heading NAME`"),
              ("exact=true", "--exact"))


def cli_wording(text: str) -> str:
    for mcp, cli in MCP_TO_CLI:
        text = text.replace(mcp, cli)
    return text


def _print_memory(args, out: dict, record, render_fn) -> None:
    """A memory tool's answer: its JSON with --json, else the MCP tool's text in the CLI's words."""
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(cli_wording(render_fn(record.parse(out))))


def cmd_history(args) -> int:
    from remembrancer.indexer.answers import HistoryAnswer
    from remembrancer.mcp_server.render import history_text

    out = _memory_call(args, "history", entity=args.entity, topic=args.topic, since=args.since,
                       until=args.until, limit=args.limit)
    _print_memory(args, out, HistoryAnswer, history_text)
    return EXIT_OK if out["results"] else EXIT_NOTHING


def cmd_latest(args) -> int:
    from remembrancer.indexer.answers import LatestAnswer
    from remembrancer.mcp_server.render import latest_text

    out = _memory_call(args, "latest", terms=args.terms, since=args.since, until=args.until, type=args.type,
                       path=args.path, limit=args.limit, corpus=args.corpus)
    _print_memory(args, out, LatestAnswer, latest_text)
    return EXIT_OK if out["results"] and not out.get("relaxed") else EXIT_NOTHING


def cmd_neighbors(args) -> int:
    from remembrancer.indexer.answers import NeighborsAnswer
    from remembrancer.mcp_server.render import neighbors_text

    out = _memory_call(args, "neighbors", path=corpus_path(args.path, args.root), limit=args.limit)
    _print_memory(args, out, NeighborsAnswer, neighbors_text)
    return EXIT_OK


def cmd_verify(args) -> int:
    from remembrancer.indexer.answers import VerifyAnswer
    from remembrancer.mcp_server.render import verify_text

    text = sys.stdin.read() if args.text == "-" else args.text
    if bool(args.path) == bool(text):   # here, not in the engine: its message is in the MCP tool's syntax
        raise UserError("give a document PATH (optionally with --heading) or --text, exactly one of them", param="path",
                        hint="remembrancer verify journal/2030/2030-02-10.md, or remembrancer verify --text 'landed in "
                             "4f2a9c1' (--text - reads stdin)")
    out = _memory_call(args, "verify", path=corpus_path(args.path, args.root) if args.path else None,
                       heading=args.heading, text=text)
    _print_memory(args, out, VerifyAnswer, verify_text)
    commits = out.get("commits") or []
    return EXIT_OK if commits and all(c["verdict"] == "landed" for c in commits) else EXIT_NOTHING


def cmd_report(args) -> int:
    from pathlib import Path

    from remembrancer.indexer.config import load_config
    from remembrancer.indexer.store.filters import _date
    from remembrancer.indexer.search.querylog import default_path, format_report, path_for, read_redacted, summarise
    from remembrancer.indexer.redact_policy import RedactionPolicy, RedactorSource

    try:
        config = load_config(None, with_roots=False)   # a config whose roots are gone must not hide the log
    except UserError:
        config = None
    path = Path(args.log).expanduser() if args.log else path_for(config) if config else default_path()
    # shown under the policy in force (a broken secret-hash file: RedactionError, nothing shown)
    redactor = RedactorSource(config.redact if config else RedactionPolicy()).current()
    since = _date("since", args.since)
    rep = summarise(read_redacted(path, redactor, since), slow_ms=args.slow_ms, top=args.top)
    rep["log"] = str(path)
    if args.json:
        print(json.dumps(rep, indent=2, ensure_ascii=False))
    else:
        print(format_report(rep, path))
    return EXIT_OK


def cmd_list(args) -> int:
    out = _backend(args, missing="error").call("list", path=args.path, type=args.type, corpus=args.corpus,
                                               offset=args.offset, limit=args.limit)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        from remembrancer.indexer.answers import DocumentList
        from remembrancer.mcp_server.render import list_terminal_text

        page = DocumentList.parse(out)
        print(list_terminal_text(page))
        if page.documents and (page.truncated or page.offset):
            first = (page.offset or 0) + 1
            print(f"shown: documents {first}-{first + len(page.documents) - 1} of {page.total}"
                  + (f"; the next ones: {_list_again(page.next_offset)}" if page.truncated else ""))
    return EXIT_OK


def _list_again(offset: int) -> str:
    """This `list` command line again, from `offset` (shell-quoted)."""
    import shlex

    words, skip = ["remembrancer"], False
    for w in _ARGV:
        if skip:
            skip = False
            continue
        if w == "--offset":
            skip = True
            continue
        if not w.startswith("--offset="):
            words.append(w)
    return shlex.join(words + ["--offset", str(offset)])


def cmd_serve(args) -> int:
    from remembrancer.daemon.server import Daemon
    from remembrancer.indexer.config import load_config

    logging.getLogger().setLevel(logging.DEBUG if args.debug else logging.INFO)
    if args.store:   # the team store's one writer (indexer/team.py)
        from remembrancer.indexer.team import Writer

        w = Writer(_load(args), args.store)
        try:
            w.serve(interval_s=args.pull_every)
        finally:
            w.close()
        return EXIT_OK
    d = Daemon(_load(args), idle_exit_s=args.idle_exit, rescan_s=args.rescan,
               corpus_idle_s=args.corpus_idle if args.corpus_idle > 0 else None,
               reload=lambda: _load(args))   # an edited config file is applied while it serves
    d.serve_forever()
    return EXIT_OK


def cmd_stop(args) -> int:
    from remembrancer.wire import Client, DaemonUnavailable
    from remembrancer.daemon.connect import process_alive, running_daemon
    from remembrancer.indexer.config import socket_path

    found = running_daemon()   # the data dir's daemon, also when it listens on another socket
    sock = found[0] if found else socket_path()
    try:
        with Client(sock, timeout=5) as c:
            pid = c.call("status")["daemon"]["pid"]
            c.call("stop")
    except DaemonUnavailable:
        print(f"no daemon running on {sock}")
        return EXIT_OK
    # done when the process is gone, not when its socket is: it still closes its indexes after that,
    # and a `stop && serve` must not find the old one holding them
    deadline = time.monotonic() + STOP_WAIT_S
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_alive(pid):
        print(f"remembrancer: asked daemon pid {pid} to stop; it is still running after {STOP_WAIT_S:.0f} s "
              f"(finishing a write?): `kill {pid}` ends it, the index survives", file=sys.stderr)
        return EXIT_NOTHING
    print(f"stopped daemon pid {pid}")
    return EXIT_OK


def cmd_notify(args) -> int:
    from remembrancer.hooks.notify import notify

    if args.store:   # the writer LISTENs on the store (indexer/team.py); no local daemon involved
        from remembrancer.indexer.store.postgres.notify import notify_writer

        if not notify_writer(args.store, args.event, timeout=5.0):
            from remembrancer.indexer.store.postgres.store import safe_url

            raise UserError(f"could not notify the store {safe_url(args.store)}", param="store", code="store_unreachable",
                            hint="check the URL and the server (the writer still pulls on its timer)")
        return EXIT_OK
    notify(args.root or os.getcwd(), args.event, timeout=2.0)
    return EXIT_OK


def cmd_hooks(args) -> int:
    from remembrancer.hooks.install import install_hooks, uninstall_hooks

    fn = install_hooks if args.hooks_command == "install" else uninstall_hooks
    report = fn(args.repo)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"hooks dir: {report['hooks_dir']}")
        for name, what in report["hooks"].items():
            print(f"  {name}: {what}")
    return EXIT_OK


def cmd_corpora(args) -> int:
    """`remembrancer corpora`: every index under the data dir; `forget` deletes one (the daemon
    serving it closes it and deletes it itself, so no request reopens it half-deleted)."""
    from remembrancer.daemon.connect import DaemonBackend, running_daemon
    from remembrancer.indexer import indexes

    if args.action == "list" and args.corpus:
        raise UserError(f"`corpora` lists them all; got {args.corpus!r}", param="corpus",
                        hint=f"to delete one's index: remembrancer corpora forget {args.corpus}")
    if args.action == "forget" and not args.corpus:
        raise UserError("forget which corpus?", param="corpus",
                        hint="remembrancer corpora forget NAME|PATH (`remembrancer corpora` lists the names)")
    sock, st = running_daemon() or (None, None)   # the data dir's daemon, whatever socket it is on
    if args.action == "forget":
        index = indexes.find(args.corpus)
        row = indexes.describe(index)
        out = {"forgot": index.name, "roots": row["roots"], "bytes": row["bytes"], "daemon_closed": 0}
        if st is not None:   # it may serve it: it closes and deletes it itself
            daemon = DaemonBackend(sock, st)
            try:
                out["daemon_closed"] = daemon.call("forget", index=index.name)["closed"]
            finally:
                daemon.close()
        if index.dir.exists():   # no daemon, or one with another data dir
            indexes.remove(index)
        if args.json:
            print(json.dumps(out, indent=2))
        else:
            roots = ", ".join(out["roots"]) if out["roots"] else "roots not recorded"
            print(f"forgot {index.name} ({roots}): its index ({_size(out['bytes'])}) is deleted; the notes are "
                  "untouched" + (" — the daemon stopped serving it" if out["daemon_closed"] else ""))
        return EXIT_OK
    return _print_corpora(args, st)


def _print_corpora(args, st: dict | None) -> int:
    """Every index under the data dir, a line each (or JSON), beside what the daemon `st` serves."""
    from remembrancer.indexer import indexes
    from remembrancer.indexer.config import data_dir

    served = {}
    for c in (st or {}).get("corpora") or []:
        served[c.get("index_dir")] = c
    rows = []
    for index in indexes.known():
        row = indexes.describe(index)
        d = served.get(row["index_dir"])
        row["daemon"] = d.get("state") if d else None   # open / closed (reopened on the next request) / none
        if d and d.get("state") == "open" and d.get("idle_s") is not None:
            row["last_used_at"] = time.time() - d["idle_s"]
        rows.append(row)
    if args.json:
        print(json.dumps({"data_dir": str(data_dir()), "daemon": (st or {}).get("daemon", {}).get("pid"),
                          "corpora": rows}, indent=2))
        return EXIT_OK
    if not rows:
        print(f"no indexed corpora in {data_dir()} (index a folder: remembrancer index --root DIR)")
        return EXIT_OK
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["last_used_at"])) if r["last_used_at"] else "?"
        docs = "?" if r["documents"] is None else f"{r['documents']} document" + ("" if r["documents"] == 1 else "s")
        daemon = {"open": "served by the daemon", "closed": "known to the daemon (idle)"}.get(r["daemon"], "no daemon")
        print(f"{r['name']}  {docs}  {_size(r['bytes'])}  last used {when}  {daemon}")
        print("    " + (one_line(", ".join(r["roots"])) if r["roots"] else "(roots not recorded: indexed by an older version)")
              + (f"  [missing: {', '.join(r['missing_roots'])}]" if r.get("missing_roots") else "")
              + "".join(f"  [{root} now resolves to {real}: not the folder indexed]"
                        for root, real in (r.get("relinked_roots") or {}).items())
              + (f"  [{r['problem']}]" if r.get("problem") else ""))
    return EXIT_OK


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def cmd_team(args) -> int:
    if args.team_command == "token":
        return _team_token(args)
    from remembrancer.indexer.store.postgres import roles as pg_roles

    if not args.store:
        raise UserError("team commands need the store", param="store",
                        hint="--store postgresql://WRITER@HOST/DB (the writer's role: it owns the tables)")
    if args.team_command == "grant-reader":
        password = sys.stdin.readline().rstrip("\r\n") if args.password_stdin else None
        out = [pg_roles.grant_reader(args.store, args.role, args.scope, password=password, everything=args.everything)]
    elif args.team_command == "revoke-reader":
        out = [pg_roles.revoke_reader(args.store, args.role, args.scope)]
    else:
        out = pg_roles.readers(args.store)
    if args.json:
        print(json.dumps(out if args.team_command == "readers" else out[0], indent=2))
        return EXIT_OK
    for r in out:
        what = "the whole store" if r["reads_all"] else ", ".join(r["scope"]) if r["scoped"] and r["scope"] else None
        print(f"{r['role']}: reads {what}" if what else f"{r['role']}: reads nothing of this store")
    if not out:
        print("no readers")
    return EXIT_OK


def _team_token(args) -> int:
    """`team token create|revoke|list`: this machine's bearer tokens of `serve-http`."""
    from remembrancer.mcp_server import tokens

    if args.token_action in ("create", "revoke") and not args.name:
        raise UserError(f"team token {args.token_action} needs the token's name", param="name",
                        hint="e.g. remembrancer team token create alice-laptop --scope journal/")
    if args.token_action != "create" and args.scope:
        raise UserError("--scope goes with `team token create`", param="scope")
    if args.token_action == "create":
        token, record = tokens.create(args.name, args.scope)
        if args.json:
            print(json.dumps({**record.shown(), "token": token}))
        else:
            where = ", ".join(record.scopes) if record.scopes else "everything"
            # the token on stdout alone: stderr goes to logs (a service's journal), which keep no secret
            print(f"token {record.name} (reads {where}); shown once, keep it in a secret store:\n{token}")
            print(f"register it: claude mcp add --transport http memory https://HOST/mcp --header "
                  f"\"Authorization: Bearer {token}\"")
        return EXIT_OK
    if args.token_action == "revoke":
        record = tokens.revoke(args.name)
        print(json.dumps(record.shown()) if args.json else f"revoked {record.name}: refused from its next request")
        return EXIT_OK
    rows = [r.shown() for r in tokens.load()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            made = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"]))
            print(f"{r['name']}: {', '.join(r['scopes']) or 'everything'} (created {made})")
        if not rows:
            print("no tokens")
    return EXIT_OK


def cmd_serve_http(args) -> int:
    from remembrancer.mcp_server.http import run

    return run(args.root or None, args.store, host=args.host, port=args.port, path=args.path,
               public_url=args.public_url, instructions=args.instructions)


def cmd_mcp(args) -> int:
    if args.action == "config":
        return _mcp_config(args)
    if args.install or args.desktop_config:
        raise UserError("--install and --desktop-config go with `remembrancer mcp config`", param="install")
    from remembrancer.mcp_server.server import run

    return run(args.root, idle_exit_s=args.idle_exit, instructions=args.instructions, scopes=args.scope,
               store=args.store, conversation_args=args.conversations, code_args=args.code)


def _mcp_config(args) -> int:
    from pathlib import Path

    from remembrancer.indexer.config import load_config
    from remembrancer.indexer.store.scope import check_exists, normalize
    from remembrancer.mcp_server.client_config import claude_code_line, desktop_json, install_desktop, mcp_args

    if args.desktop_config and not args.install:
        raise UserError("--desktop-config names the file --install writes", param="desktop-config",
                        hint="add --install, or leave --desktop-config out to only print the lines")
    roots = [str(r.path) for r in _load(args).roots] if args.root else []   # a typo fails here
    scopes = list(normalize(args.scope))
    served = load_config(roots or None).roots   # without --root: the config's roots, if any, are served
    if scopes and served:
        check_exists(served, tuple(scopes))
    talks = [str(r.path) for r in _load(args).conversations] if args.conversations else []   # checked here
    source = [str(r.path) for r in _load(args).code] if args.code else []   # checked here
    flags = mcp_args(roots, scopes, args.instructions, args.store, args.idle_exit, talks, source)
    if roots:
        print(f"# Claude Code — one line for every project; every session serves {', '.join(roots)}:")
    else:
        print("# Claude Code — one line for every project; it serves the config file's roots, else a project "
              "folder already indexed (pass --root DIR to pin your notes):")
    print(claude_code_line(flags))
    print("\n# Claude Desktop — claude_desktop_config.json (it has no project: "
          + ("the roots given here)" if roots else "the config file's roots, or add --root DIR here)") + ":")
    print(json.dumps(desktop_json(flags), indent=2))
    if args.install:
        report = install_desktop(flags, Path(args.desktop_config).expanduser() if args.desktop_config else None)
        print(f"\nClaude Desktop: {report['result']} in {report['config']} (restart Claude Desktop to load it)")
    return EXIT_OK


def cmd_claude_hooks(args) -> int:
    from pathlib import Path

    from remembrancer.hooks.claude_settings import install, uninstall

    fn = install if args.claude_hooks_command == "install" else uninstall
    report = fn(Path(args.settings).expanduser() if args.settings else None)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"Claude Code hooks {report['result']}: {report['settings']}"
              + (f" ({', '.join(report['events'])})" if report["events"] else ""))
        if report.get("command"):
            print(f"hook command: {report['command']}")
    return EXIT_OK


def cmd_uninstall(args) -> int:
    from pathlib import Path

    from remembrancer.cli.uninstall_cmd import run

    for line in run(purge=args.purge, dry_run=args.dry_run,
                    settings=Path(args.settings).expanduser() if args.settings else None, roots=args.root):
        print(line)
    return EXIT_OK


def _add_listen(p) -> None:
    """Where `serve-http` listens (its own flags, and `service install --http`'s)."""
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (put TLS in a reverse proxy in front)")
    p.add_argument("--port", type=int, default=8848)
    p.add_argument("--path", default="/mcp", help="the endpoint's path")
    p.add_argument("--public-url", metavar="URL", help="the address clients use (behind a proxy), e.g. https://memory.example.com")


def _listen_args(args) -> list[str]:
    return ["--host", args.host, "--port", str(args.port), "--path", args.path,
            *(["--public-url", args.public_url] if args.public_url else [])]


def cmd_service(args) -> int:
    if args.service_command == "install":
        from remembrancer.daemon import service

        if args.store:
            from remembrancer.indexer.store.postgres.store import check_url, has_password

            if has_password(check_url(args.store)):
                raise UserError("the store URL holds a password, which the unit file would keep for anyone who can "
                                "read it", param="store", hint="put the password in ~/.pgpass (libpq reads it) and "
                                                               "give the URL without it")
        if args.pull_every and (args.http or not args.store):
            raise UserError("--pull-every goes with --store (the writer's pull interval)", param="pull-every")
        if args.http:
            if not args.store and not args.root:
                raise UserError("the HTTP endpoint's unit needs what it serves", param="root",
                                hint="add --store URL (a team store) or --root DIR (this machine's corpus)")
            unit = service.http_unit(_load(args), args.store, _listen_args(args))
        elif args.store:
            if not args.root:
                raise UserError("the writer's unit needs the checkout it pulls and indexes", param="root",
                                hint="add --root CHECKOUT")
            unit = service.writer_unit(_load(args), args.store, args.pull_every)
        else:
            unit = service.daemon_unit(_load(args))
        ok, report = service.install_service(unit, start=not args.no_start, dry_run=args.dry_run)
    else:
        from remembrancer.daemon.service import uninstall_service

        ok, report = True, uninstall_service()
    for line in report:
        print(line)
    return EXIT_OK if ok else EXIT_USER


def cmd_doctor(args) -> int:
    from remembrancer.daemon.doctor import run_checks

    checks = run_checks(args.root, store_reader=bool(args.store))
    if args.store:
        from remembrancer.indexer.team import store_checks

        checks += store_checks(args.store, args.root)
    if args.json:
        print(json.dumps(checks, indent=2))
    else:
        for c in checks:
            print(f"[{c['status']:>4}] {c['check']}: {c['detail']}" + (f"\n       fix: {c['fix']}" if c.get("fix") else ""))
    return EXIT_OK if all(c["status"] != "FAIL" for c in checks) else EXIT_USER


def cmd_secrets(args) -> int:
    from remembrancer.cli.secrets_cmd import main as secrets_main

    return secrets_main(args)


COMMANDS = {
    "index": cmd_index, "search": cmd_search, "read": cmd_read, "outline": cmd_outline,
    "status": cmd_status, "eval": cmd_eval, "list": cmd_list, "serve": cmd_serve, "stop": cmd_stop,
    "notify": cmd_notify, "hooks": cmd_hooks, "mcp": cmd_mcp, "serve-http": cmd_serve_http, "service": cmd_service, "doctor": cmd_doctor,
    "secrets": cmd_secrets, "history": cmd_history, "latest": cmd_latest, "neighbors": cmd_neighbors,
    "verify": cmd_verify, "report": cmd_report, "claude-hooks": cmd_claude_hooks, "team": cmd_team,
    "corpora": cmd_corpora, "uninstall": cmd_uninstall,
}

if __name__ == "__main__":
    sys.exit(main())
