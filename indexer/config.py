"""Where things live and what the user configured.

Paths follow platformdirs: config in the user config dir, one index per corpus under
the user data dir, the daemon socket in the runtime dir. Each has an environment override so
tests and odd setups never touch a real home directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from remembrancer import wire
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.ingest.transcripts import DOC_TYPES as CONVERSATION_TYPES
from remembrancer.indexer.models.spec import COMPUTES, INT8_SPEC, Endpoint, RerankSpec, ServerModel
from remembrancer.indexer.search.rank import RankingConfig
from remembrancer.indexer.redact_policy import RedactionPolicy  # [redact]: secret patterns, hash file, path denylist

APP = "remembrancer"

# A daily note, a file named by its day: `memory/2025-01-05.md`, Logseq's `journals/2025_01_05.md`.
DAY_FILES = ("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md", "[0-9][0-9][0-9][0-9]_[0-9][0-9]_[0-9][0-9].md")
DEFAULT_LAYOUT: tuple[tuple[str, str], ...] = (
    ("journal/**", "journal"),
    *(("**/" + day, "journal") for day in DAY_FILES),
    ("hosts/*", "host"),
    ("services/*", "service"),
    ("runbooks/**", "runbook"),
    ("memory/*", "lesson"),
    ("planning/**", "plan"),
    ("**/CHANGELOG*", "changelog"),
    ("**/CHANGES*", "changelog"),
    ("**/HISTORY*", "changelog"),
    ("**/NEWS*", "changelog"),
    ("**/RELEASE-NOTES*", "changelog"),
    ("*", "doc"),
)
DOC_TYPES = ("journal", "host", "service", "runbook", "lesson", "plan", "changelog", "doc")
# Types whose front matter defines entities (a host and its aliases/IPs).
ENTITY_TYPES = ("host", "service")

DEFAULT_EXCLUDES = (
    ".git/", "node_modules/", ".venv/", "venv/", "env/", "__pycache__/", ".tox/", ".mypy_cache/",
    ".pytest_cache/", ".cache/", "site-packages/", ".obsidian/", ".trash/",
)
MAX_FILE_BYTES = 10 * 1024 * 1024
# A code corpus also leaves out what is generated rather than written: minified bundles, lock files.
CODE_EXCLUDES = ("*.min.js", "*.min.css", "*-lock.yaml", "*.lock.yaml", "*.pb.go", "*_pb2.py")


def config_path() -> Path:
    """$REMEMBRANCER_CONFIG, else the user config dir's config.toml (wire.config_file: the hooks' too)."""
    return Path(wire.config_file())


# The settings a user sets in the shell, carried into what an install writes (service units, MCP
# client configs, the Claude Code hook command): without them those would use other paths.
PASSED_ENV = ("REMEMBRANCER_CONFIG", "REMEMBRANCER_DATA_DIR", "REMEMBRANCER_SOCKET", "REMEMBRANCER_SECRET_HASHES")


def passed_env() -> dict[str, str]:
    """The REMEMBRANCER_* settings of this shell, carried into units and client configs."""
    return {k: os.environ[k] for k in PASSED_ENV if os.environ.get(k)}


def data_dir() -> Path:
    env = os.environ.get("REMEMBRANCER_DATA_DIR")
    return Path(env) if env else Path(platformdirs.user_data_dir(APP))


def ensure_data_dir() -> Path:
    """The data dir, created if missing: a wrong REMEMBRANCER_DATA_DIR is a setup error with a fix,
    not an internal error deep inside the catalog."""
    d = data_dir()
    if d.is_dir():
        _make_private(d)
        return d
    try:
        blocker = next((p for p in (d, *d.parents) if p.exists() and not p.is_dir()), None)
        if blocker is None:
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            return d
        why = f"{blocker} is a file, not a folder"
    except OSError as e:
        why = f"cannot create {e.filename or d}: {e.strerror or e}"
    var = "REMEMBRANCER_DATA_DIR" if os.environ.get("REMEMBRANCER_DATA_DIR") else None
    raise UserError(f"cannot use the data dir {d}" + (f" (from {var})" if var else "") + f": {why}",
                    param=var or "data dir", code="bad_data_dir",
                    hint=(f"set {var} to a folder you can write (it is created if missing), or unset it"
                          if var else f"make {d} a writable folder, or set REMEMBRANCER_DATA_DIR to one"))


# What remembrancer keeps in the data dir: made private at every start (_make_private).
DATA_DIR_FOLDERS = ("indexes", "logs", "models")
DATA_DIR_FILES = ("daemon.log", "daemon.lock")
_made_private: set[Path] = set()


def private_data_dir() -> None:
    """The data dir made private if it exists (a client that may only talk to the daemon)."""
    d = data_dir()
    if d.is_dir():
        _make_private(d)


def make_private(directory: Path) -> None:
    """0700 folders and 0600 files under `directory` (the index holds the corpus' text): set
    explicitly, whatever the umask, for the files SQLite, tantivy and hnswlib create."""
    for here, dirs, files in os.walk(directory):
        for name, mode in [(d, 0o700) for d in dirs] + [(f, 0o600) for f in files] + [("", 0o700)]:
            p = os.path.join(here, name) if name else here
            try:
                st = os.lstat(p)
                if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) != mode:
                    os.chmod(p, mode)
            except OSError:  # a file tantivy removed meanwhile
                continue


def _make_private(d: Path) -> None:
    """0700 for the data dir and 0700/0600 for what remembrancer keeps in it, once per process:
    a data dir made by a user or a tool (0755) let other users list the corpora and read the
    daemon log. Only our own entries are touched: a data dir set to a shared folder keeps the rest."""
    if d in _made_private:
        return
    _made_private.add(d)
    if too_wide(d.resolve()) is None:
        with contextlib.suppress(OSError):   # not ours: nothing to tighten here
            os.chmod(d, 0o700)
    for name in DATA_DIR_FOLDERS:
        if (d / name).is_dir() and not (d / name).is_symlink():
            make_private(d / name)
    for name in DATA_DIR_FILES:
        with contextlib.suppress(OSError):
            if not (d / name).is_symlink():
                os.chmod(d / name, 0o600)


SOCKET_PATH_MAX = wire.SOCKET_PATH_MAX


def socket_path() -> Path:
    """The daemon socket (resolved by remembrancer.wire, the hooks' and clients' one resolver); one
    too long to bind is refused here as a UserError, before any client or daemon waits on it."""
    try:
        return Path(wire.socket_path())
    except wire.SocketPathTooLong as e:
        raise _socket_error(e) from None


def check_socket_path(path: Path, var: str | None = "REMEMBRANCER_SOCKET") -> Path:
    """`path` if AF_UNIX can bind it, else a UserError naming `var` (the variable it came from)."""
    try:
        return Path(wire.check_socket_path(str(path), var))
    except wire.SocketPathTooLong as e:
        raise _socket_error(e) from None


def _socket_error(e: wire.SocketPathTooLong) -> UserError:
    return UserError(str(e), param=e.var or "REMEMBRANCER_SOCKET", code="bad_socket",
                     hint=f"set REMEMBRANCER_SOCKET to a shorter path (at most {SOCKET_PATH_MAX} bytes)"
                          + (", or unset it for the default" if e.var == "REMEMBRANCER_SOCKET" else ""))


NOTES = "notes"
CONVERSATIONS = "conversations"
COMMITS = "commits"   # the commit messages of the notes' repositories (indexer/ingest/commit_log.py)
CODE = "code"         # source files, opt-in: [code] roots / --code (indexer/ingest/code.py)
# The source files a code corpus takes by default ([code] include replaces the list): the languages
# the syntax-aware chunker knows (ingest/code.py LANGUAGES), and a few it reads as plain windows.
CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt", ".c",
                 ".h", ".cc", ".cpp", ".hpp", ".cs", ".rb", ".php", ".swift", ".scala", ".lua", ".sh", ".bash",
                 ".sql", ".toml", ".yaml", ".yml")
MARKDOWN = (".md", ".markdown")
# What each corpus kind indexes: Markdown notes, or Claude Code session transcripts (JSON Lines)
# and Claude Code's own memory files (Markdown in a project's `memory/` folder: Root.takes).
SUFFIXES = {NOTES: MARKDOWN, CONVERSATIONS: (".jsonl", *MARKDOWN), COMMITS: (), CODE: CODE_SUFFIXES}
MEMORY_FOLDER = "memory"
MEMORY_TYPE = "memory"   # the doc type of a Claude Code memory file
COMMIT_TYPE = "commit"   # the doc type of a commit
CODE_TYPE = "code"       # the doc type of a source file
# A team-store reader started without --root knows the writer's roots by name only: each stands
# under this folder, which never exists (indexer/team.py reader_config). `read` and `status` say so
# instead of showing the path or calling a file "outside its root".
NO_CHECKOUT = Path("/nonexistent/remembrancer-team")
NO_CHECKOUT_NOTE = "no checkout here (pass --root CHECKOUT, your clone of the notes)"


def has_checkout(path: str | Path) -> bool:
    """False for a team reader's root that is a name only (no --root)."""
    return not Path(path).is_relative_to(NO_CHECKOUT)


def shown_root(path: str | Path) -> str:
    """A root's folder as `status` shows it: the path, or for a name-only root what to pass."""
    return str(path) if has_checkout(path) else NO_CHECKOUT_NOTE


# A transcript grows for as long as its session lasts: real ones reach tens of megabytes.
MAX_TRANSCRIPT_BYTES = 200 * 1024 * 1024


@dataclass(frozen=True)
class Root:
    """One corpus root: a git checkout or a plain folder, of notes or of conversations."""

    name: str
    path: Path
    kind: str = NOTES

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The file endings a watch of this root reacts to (the walk then asks `takes`)."""
        return SUFFIXES[self.kind]

    def takes(self, rel: str) -> bool:
        """Whether the file at `rel` is one of this root's: any Markdown file of notes; a
        transcript, or a Markdown file in a `memory/` folder (Claude Code's memory), of conversations."""
        low = rel.lower()
        if self.kind == COMMITS:   # its documents are commits, not files
            return False
        if self.kind == CODE:
            return low.endswith(CODE_SUFFIXES)
        if self.kind == NOTES:
            return low.endswith(MARKDOWN)
        parts = rel.split("/")
        return low.endswith(".jsonl") or (low.endswith(MARKDOWN) and len(parts) >= 2 and parts[-2] == MEMORY_FOLDER)


@dataclass
class Config:
    roots: list[Root] = field(default_factory=list)
    excludes: tuple[str, ...] = DEFAULT_EXCLUDES
    max_file_bytes: int = MAX_FILE_BYTES
    model: str | ServerModel | None = None  # None → the default packaged model; a model directory; a server
    rerank: RerankSpec | None = None      # [rerank]: a cross-encoder re-orders the best candidates (off by default)
    layout: tuple[tuple[str, str], ...] = DEFAULT_LAYOUT
    ranking: RankingConfig = field(default_factory=RankingConfig)
    redact: RedactionPolicy = field(default_factory=RedactionPolicy)  # see indexer/redact.py
    log_queries: bool = True              # [log] queries: the local query log (indexer/search/querylog.py), opt-out
    query_log: Path | None = None         # [log] path; default <data dir>/logs/queries.jsonl
    verify_repos: list[Path] = field(default_factory=list)  # [verify] repos: more git repos `verify` checks
    metrics_textfile: Path | None = None  # [metrics] textfile: Prometheus metrics after each ingest
    source: Path | None = None
    kind: str = NOTES                     # what the roots hold: NOTES, CONVERSATIONS (transcripts), COMMITS
    conversations: list[Root] = field(default_factory=list)   # [conversations] roots / --conversations
    code: list[Root] = field(default_factory=list)   # [code] roots / --code: source folders, a corpus of their own
    # The conversation folders are the project's own, found by themselves (no --conversations, no
    # [conversations] roots, find not false): a long-lived client looks for them again
    # (found_conversations), as Claude Code creates a project's folder only when its first session writes.
    finds_conversations: bool = field(default=False, compare=False)

    def conversation_config(self) -> "Config | None":
        """The corpus of these notes' conversation folders (its own index, its own statistics), or None."""
        if not self.conversations or self.kind != NOTES:
            return None
        return dataclasses.replace(self, roots=list(self.conversations), conversations=[], kind=CONVERSATIONS,
                                   finds_conversations=False,
                                   layout=(("*", MEMORY_TYPE),),   # its Markdown: Claude Code's memory files
                                   max_file_bytes=max(self.max_file_bytes, MAX_TRANSCRIPT_BYTES),
                                   ranking=RankingConfig.conversations(),
                                   # a session's commits are checked in the notes' repositories too
                                   verify_repos=[*self.verify_repos, *(r.path for r in self.roots)])

    def code_config(self) -> "Config | None":
        """The corpus of these notes' source folders (its own index and statistics), or None."""
        if not self.code or self.kind != NOTES:
            return None
        return dataclasses.replace(self, roots=list(self.code), conversations=[], code=[], kind=CODE,
                                   finds_conversations=False,
                                   layout=(("*", CODE_TYPE),), ranking=RankingConfig(), verify_repos=[],
                                   excludes=(*self.excludes, *CODE_EXCLUDES))

    def index_dir(self) -> Path:
        """One index per corpus: named after its roots so two corpora never share a catalog."""
        return ensure_data_dir() / "indexes" / self.index_name()

    def index_name(self) -> str:
        """The index folder's name (computed without creating the data dir: a lookup must leave no trace)."""
        key = "\n".join(sorted(str(r.path) for r in self.roots))
        if self.kind != NOTES:   # the same folder as notes and as conversations: two indexes
            key = f"{self.kind}\n{key}"
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        label = ("" if self.kind == NOTES else f"{self.kind}-") + "+".join(r.name for r in self.roots)
        label = label[:40]
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
        return f"{safe}-{digest}"

    @property
    def doc_types(self) -> tuple[str, ...]:
        if self.kind == CONVERSATIONS:
            return (*CONVERSATION_TYPES, MEMORY_TYPE)
        if self.kind == COMMITS:
            return (COMMIT_TYPE,)
        if self.kind == CODE:
            return (CODE_TYPE,)
        seen = list(DOC_TYPES)
        for _, t in self.layout:
            if t not in seen:
                seen.append(t)
        return tuple(seen)


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, KeyError, OSError):   # no HOME and no passwd entry
        return None


def too_wide(folder: Path) -> str | None:
    """"/" or "home" when a resolved folder is the filesystem root or the home folder itself: never a
    corpus (indexing everything under it is never what was meant), whoever names it."""
    if folder == Path(folder.anchor):
        return "/"
    return "home" if folder == _home() else None


def model_path_hint(config_file: Path) -> str:
    """What to do about a [model] path that does not hold a model."""
    return (f"set [model] path in {config_file} to a folder holding model.onnx, tokenizer.json and "
            "remembrancer-model.toml, or remove it to use the default model")


def make_roots(paths: list[str | Path], source: Path | None = None, kind: str = NOTES) -> list[Root]:
    """Resolve root folders; names are folder names, made unique when two collide.

    `source` is the config file the paths came from (its `roots`), named in the errors instead of
    --root. `/`, the home folder and a root inside another are refused: each would index files
    nobody meant (all of a disk, or the same notes twice). `kind`: CONVERSATIONS for folders of
    transcripts (`--conversations`, `[conversations] roots`), named so in the errors."""
    def refuse(message: str, cli_hint: str, config_hint: str) -> UserError:
        key = "roots" if kind == NOTES else f"[{kind}] roots"
        where = f"invalid config {source}: {key}: " if source else ""
        err = UserError(where + message, param="roots" if source else "root",
                        hint=config_hint if source else cli_hint)
        words = {CONVERSATIONS: (("--root", "--conversations"), ("roots = [", "[conversations] roots = ["),
                                 ("Markdown files", "Claude Code transcripts"), ("notes folder", "conversations folder"),
                                 ("~/notes", "~/.claude/projects/<project>")),
                 CODE: (("--root", "--code"), ("roots = [", "[code] roots = ["), ("Markdown files", "source files"),
                        ("notes folder", "source folder"), ("~/notes", "~/code/app"))}.get(kind, ())
        for a, b in words:
            err.message, err.hint = err.message.replace(a, b), (err.hint or "").replace(a, b)
        if words:
            err.param = kind
        return err

    roots: list[Root] = []
    given: list[str] = []   # each root as the user wrote it, for the messages
    names: set[str] = set()
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            raise refuse(f"root not found: {raw}", "pass an existing folder with --root",
                         f"correct or remove it in roots = [...] of {source}, or pass --root DIR instead")
        if not p.is_dir():
            raise refuse(f"root is not a folder: {raw}", "--root takes a folder of Markdown files",
                         f"roots = [...] of {source} lists folders of Markdown files: fix or remove it")
        p = p.resolve()
        if wide := too_wide(p):
            what = "the filesystem root" if wide == "/" else "your home folder"
            raise refuse(f"root {raw} is {what}: indexing everything under it is never what was meant",
                         "point --root at the notes folder, e.g. --root ~/notes",
                         f'list the notes folder instead in {source}, e.g. roots = ["~/notes"]')
        if any(r.path == p for r in roots):
            continue
        for r, r_raw in zip(roots, given):
            if p.is_relative_to(r.path) or r.path.is_relative_to(p):
                inner, outer = (raw, r_raw) if p.is_relative_to(r.path) else (r_raw, raw)
                raise refuse(f"root {inner} is inside root {outer}: its files would be indexed twice",
                             f"give only the outer folder: --root {outer}",
                             f"keep only the outer folder, {outer}, in roots = [...] of {source}")
        name = p.name or "root"
        n, i = name, 2
        while n in names:
            n, i = f"{name}-{i}", i + 1
        names.add(n)
        roots.append(Root(n, p, kind))
        given.append(str(raw))
    return roots


def _positive_int(value, name: str, path: Path) -> int:
    """A TOML integer >= 1 (a string such as "ten", a float or a bool is refused by name)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"invalid config {path}: {name} must be a whole number of bytes >= 1, got {value!r}",
                        param=name, hint=f"e.g. {name.split('.')[-1]} = 10485760 under [index]")
    return value


def _whole_number(table: dict, where: str, key: str, lo: int, hi: int, default: int, path: Path,
                  what: str = "a whole number") -> int:
    """`table[key]` (else `default`): a TOML integer from `lo` to `hi` (a string, a float or a
    bool is refused by name)."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise UserError(f"invalid config {path}: [{where}] {key} must be {what} from {lo} to {hi}, got {value!r}",
                        param=f"{where}.{key}", hint=f"{key} = {default}")
    return value


# Every key the config file may hold: anything else is a typo, refused with the valid names.
KNOWN_KEYS: dict[str, tuple[str, ...] | None] = {
    "roots": None, "index": ("exclude", "max_file_bytes"),
    "model": ("path", "compute", "url", "name", "query_prefix", "document_prefix", "api_key_env", "batch",
              "timeout", "query"),
    "rerank": ("path", "url", "name", "api_key_env", "top", "budget_ms"),
    "ranking": None, "layout": None, "redact": None,   # checked by their own parsers
    "log": ("queries", "path"), "verify": ("repos",), "metrics": ("textfile",),
    "conversations": ("roots", "find"), "code": ("roots",),
}


def _refuse_unknown_keys(raw: dict, path: Path) -> None:
    """Every unknown key and table of the file in one error: a file with three typos takes one run."""
    import difflib

    unknown: list[tuple[str, str | None, list[str]]] = []   # (key, its table or None, valid names there)
    for key, value in raw.items():
        if key not in KNOWN_KEYS:
            unknown.append((key, None, sorted(KNOWN_KEYS)))
            continue
        sub = KNOWN_KEYS[key]
        if sub is not None and isinstance(value, dict):
            unknown += [(k, key, sorted(sub)) for k in value if k not in sub]
    if not unknown:
        return
    parts = []
    for key, table, valid in unknown:
        where = f"[{table}] key" if table else ("table" if isinstance(raw[key], dict) else "key")
        near = difflib.get_close_matches(key, valid, n=1)
        parts.append(f"unknown {where} {key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    scopes = {table for _, table, _ in unknown}
    if len(scopes) == 1:   # one place: its valid names as they are written there
        options = unknown[0][2]
    else:
        options = sorted({f"{table}.{v}" if table else v for _, table, valid in unknown for v in valid})
    raise UserError(f"invalid config {path}: " + "; ".join(parts),
                    param=", ".join(f"{table}.{key}" if table else key for key, table, _ in unknown)
                    if len(unknown) > 1 else unknown[0][0],
                    options=options, hint="fix the names or remove them" if len(unknown) > 1
                    else "fix the name or remove it")


def _model_compute(model: dict, path: Path) -> str | None:
    """[model] compute: "float" (the packaged graph as shipped) or "int8" (its int8-compute build,
    indexer/models/int8_model.py: faster, other vectors, its own model contract)."""
    compute = model["compute"]
    if compute not in COMPUTES:
        raise UserError(f"invalid config {path}: [model] compute must be one of {', '.join(COMPUTES)}, "
                        f"got {compute!r}", param="model.compute", options=list(COMPUTES),
                        hint='compute = "int8" for the faster int8 graph of the default model')
    if model.get("path"):
        if compute == "int8":
            raise UserError(f"invalid config {path}: [model] compute = \"int8\" applies to the packaged "
                            "default model only, not to a model directory", param="model.compute",
                            hint="remove `path` to use the default model's int8 graph, or remove `compute`")
        return str(Path(model["path"]).expanduser())
    return INT8_SPEC if compute == "int8" else None


SERVER_ONLY_KEYS = ("name", "query_prefix", "document_prefix", "api_key_env", "batch", "timeout")
SERVER_PRESET_HINT = 'url = "http://localhost:11434/v1" and name = "nomic-embed-text" (see docs/models.md)'


def _endpoint(table: dict, where: str, path: Path) -> Endpoint:
    """A server's url, model name, key variable and timeout, each checked by name."""
    from urllib.parse import urlsplit

    url = table.get("url")
    why = ""
    try:   # an unclosed IPv6 bracket or a port that is not one: urlsplit (or .port) raises ValueError
        parts = urlsplit(url) if isinstance(url, str) else None
        parts is not None and parts.port
    except ValueError as e:
        parts, why = None, f" ({e})"
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"invalid config {path}: [{where}] url must be an http:// or https:// URL, got {url!r}{why}",
                        param=f"{where}.url", hint=SERVER_PRESET_HINT)
    if parts.username or parts.password:
        raise UserError(f"invalid config {path}: [{where}] url holds credentials; put the key in an environment "
                        "variable and name it in api_key_env", param=f"{where}.url",
                        hint='api_key_env = "OPENAI_API_KEY"')
    name, key_env, timeout = table.get("name", ""), table.get("api_key_env", ""), table.get("timeout", 30)
    if not isinstance(name, str):
        raise UserError(f"invalid config {path}: [{where}] name must be the server's model name (a string)",
                        param=f"{where}.name")
    if not isinstance(key_env, str) or (key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env)):
        raise UserError(f"invalid config {path}: [{where}] api_key_env must name an environment variable "
                        "(the key itself never goes in the config); the value given is not a variable's name (not shown: it "
                        "may be the key)", param=f"{where}.api_key_env",
                        hint='api_key_env = "OPENAI_API_KEY"')
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
        raise UserError(f"invalid config {path}: [{where}] timeout must be seconds between 0 and 600, got {timeout!r}",
                        param=f"{where}.timeout", hint="timeout = 30")
    return Endpoint(url=url, name=name, api_key_env=key_env, timeout=float(timeout))


def _local_model(cfg: Config, model: dict, path: Path) -> None:
    """[model] path (a model folder) or compute (the default model's graph)."""
    stray = [k for k in SERVER_ONLY_KEYS if k in model]
    if stray:
        raise UserError(f"invalid config {path}: [model] {', '.join(stray)} "
                        f"belong{'s' if len(stray) == 1 else ''} to an embedding server's url",
                        param=f"model.{stray[0]}", hint=SERVER_PRESET_HINT)
    if "path" in model and not isinstance(model["path"], str):
        raise UserError(f"invalid config {path}: [model] path must be a folder path string", param="model.path")
    if model.get("path"):
        cfg.model = str(Path(model["path"]).expanduser())
    if "compute" in model:
        cfg.model = _model_compute(model, path)
    if model.get("path"):   # after compute: a path with compute = "int8" is refused for that first
        _check_model_dir(model["path"], path)


def _server_model(model: dict, path: Path) -> ServerModel:
    """[model] url (+ name, prefixes, api_key_env, batch, timeout) and an optional [model.query]
    table (url, name, api_key_env, timeout) for a separate query server."""
    for clash in ("path", "compute"):
        if clash in model:
            raise UserError(f"invalid config {path}: [model] {clash} and url name two models; keep one",
                            param=f"model.{clash}", hint=f"remove `{clash}` to use the server, or `url` to use the local model")
    if "url" not in model:
        raise UserError(f"invalid config {path}: [model.query] needs the document server's [model] url too",
                        param="model.url", hint=SERVER_PRESET_HINT)
    documents = _endpoint(model, "model", path)
    queries = None
    if "query" in model:
        table = model["query"]
        extra = sorted(set(table) - {"url", "name", "api_key_env", "timeout"}) if isinstance(table, dict) else []
        if not isinstance(table, dict) or extra:
            raise UserError(f"invalid config {path}: [model.query] takes url, name, api_key_env and timeout"
                            + (f"; unknown: {', '.join(extra)}" if extra else ""), param="model.query")
        queries = _endpoint({"name": documents.name, "api_key_env": documents.api_key_env} | table,
                            "model.query", path)
    prefixes = {}
    for key in ("query_prefix", "document_prefix"):
        value = model.get(key, "")
        if not isinstance(value, str):
            raise UserError(f"invalid config {path}: [model] {key} must be a string", param=f"model.{key}",
                            hint='query_prefix = "search_query: "')
        prefixes[key] = value
    batch = _whole_number(model, "model", "batch", 1, 2048, ServerModel.batch, path)
    return ServerModel(documents=documents, queries=queries, batch=batch, **prefixes)


def _rerank(table, path: Path) -> RerankSpec:
    """[rerank] path (an ONNX cross-encoder folder) or url (a /rerank API), top, budget_ms."""
    if not isinstance(table, dict):
        raise UserError(f"invalid config {path}: [rerank] must be a table")
    hint = 'path = "~/models/ms-marco-MiniLM-L-6-v2" or url = "http://localhost:8080"'
    if ("path" in table) == ("url" in table):
        raise UserError(f"invalid config {path}: [rerank] needs one of path (an ONNX cross-encoder folder) "
                        "or url (a /rerank server)", param="rerank", hint=hint)
    top = _whole_number(table, "rerank", "top", 2, 200, 20, path)
    budget = _whole_number(table, "rerank", "budget_ms", 10, 60000, 1500, path, what="milliseconds")
    if "url" in table:
        server = _endpoint(table | {"timeout": budget / 1000}, "rerank", path)
        return RerankSpec(server=server, top=top, budget_ms=budget)
    folder = table["path"]
    if not isinstance(folder, str) or not Path(folder).expanduser().is_dir():
        raise UserError(f"invalid config {path}: [rerank] path {folder!r} is not a folder", param="rerank.path",
                        hint="a folder holding the cross-encoder's model.onnx and tokenizer.json")
    if "name" in table or "api_key_env" in table:
        raise UserError(f"invalid config {path}: [rerank] name and api_key_env belong to a url", param="rerank")
    return RerankSpec(path=str(Path(folder).expanduser()), top=top, budget_ms=budget)


def _check_model_dir(raw: str, path: Path) -> None:
    """A configured model folder that is not there is refused: a typo must not quietly turn every
    search into keyword-only. A folder that lacks files is the loader's to report (doctor FAILs)."""
    p = Path(raw).expanduser()
    if p.is_dir():
        return
    raise UserError(f"invalid config {path}: [model] path {raw!r} " + ("is not a folder" if p.exists() else "does not exist"),
                    param="model.path", hint=model_path_hint(path))


# The Config fields that name a corpus's folders rather than how it is indexed and served: a client
# and the daemon answering it may differ in them (each request names its corpus).
CORPUS_FIELDS = ("roots", "conversations", "code", "source", "kind", "finds_conversations")
# Where each of the others is written in the config file (the messages name them so).
SETTING_NAMES = {"excludes": "[index] exclude", "max_file_bytes": "[index] max_file_bytes", "model": "[model]",
                 "rerank": "[rerank]", "layout": "[[layout]]", "ranking": "[ranking]", "redact": "[redact]",
                 "log_queries": "[log] queries", "query_log": "[log] path", "verify_repos": "[verify] repos",
                 "metrics_textfile": "[metrics] textfile"}


def settings(cfg: Config, env_hashes: str | None) -> dict[str, str]:
    """How `cfg` indexes and serves, one entry per setting (named as in the file), without the folders
    it names: what a client and the daemon answering it must agree on (daemon/server.py). `env_hashes`:
    the secret-hash file REMEMBRANCER_SECRET_HASHES names in that process (it wins over the file's)."""
    out = {SETTING_NAMES.get(f.name, f.name): repr(getattr(cfg, f.name))
           for f in dataclasses.fields(cfg) if f.name not in CORPUS_FIELDS}
    out["[redact]"] = repr((cfg.redact.disable, cfg.redact.deny, env_hashes or cfg.redact.secret_hashes))
    return out


def load_config(root_args: list[str] | None = None, *, with_roots: bool = True,
                conversation_args: list[str] | None = None, code_args: list[str] | None = None,
                path: Path | None = None) -> Config:
    """Read the TOML config (if any); roots given on the command line win over configured ones,
    and so do conversation folders (`conversation_args`, from --conversations).
    `with_roots=False` leaves the roots out (doctor checks the model even when a root is wrong).
    `path`: another process's config file (the daemon comparing a client's settings), not this one's."""
    path = config_path() if path is None else path
    raw: dict = {}
    if path.exists():
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"invalid config {path}: {e}", hint="fix the TOML syntax or move the file away")
        except OSError as e:   # a folder where the file should be, no permission to read it, a broken mount
            var = "REMEMBRANCER_CONFIG" if os.environ.get("REMEMBRANCER_CONFIG") else None
            why = "is a directory" if isinstance(e, IsADirectoryError) else f"cannot be read: {e.strerror or e}"
            raise UserError(f"the config file {path}" + (f" (from {var})" if var else "") + f" {why}",
                            param=var or "config file",
                            hint=(f"set {var} to a TOML file (it need not exist), or unset it" if var
                                  else f"make {path} a readable TOML file, or set REMEMBRANCER_CONFIG to one")) from None
    _refuse_unknown_keys(raw, path)
    cfg = Config(source=path if path.exists() else None)
    index = raw.get("index", {})
    if not isinstance(index, dict):
        raise UserError(f"invalid config {path}: [index] must be a table")
    roots = raw.get("roots")
    if roots is not None and (not isinstance(roots, list) or not all(isinstance(r, str) for r in roots)):
        # checked whatever the command line says: a broken config is reported the same way every time
        raise UserError(f"invalid config {path}: roots must be a list of folder paths", param="roots",
                        hint='roots = ["~/notes", "~/work/memory"]')
    if with_roots and root_args:
        cfg.roots = make_roots(root_args)
    elif with_roots and roots:
        cfg.roots = make_roots(roots, source=path)
    excludes = index.get("exclude", [])
    if not isinstance(excludes, list) or not all(isinstance(e, str) for e in excludes):
        raise UserError(f"invalid config {path}: [index] exclude must be a list of gitignore patterns")
    cfg.excludes = DEFAULT_EXCLUDES + tuple(excludes)
    if "max_file_bytes" in index:
        cfg.max_file_bytes = _positive_int(index["max_file_bytes"], "index.max_file_bytes", path)
    model = raw.get("model", {})
    if not isinstance(model, dict):
        raise UserError(f"invalid config {path}: [model] must be a table")
    if "url" in model or "query" in model:
        cfg.model = _server_model(model, path)
    else:
        _local_model(cfg, model, path)
    if raw.get("rerank") is not None:
        cfg.rerank = _rerank(raw["rerank"], path)
    layout = raw.get("layout")
    if layout is not None:
        cfg.layout = _parse_layout(layout, path)
    ranking = raw.get("ranking")
    if ranking is not None:
        if not isinstance(ranking, dict):
            raise UserError(f"invalid config {path}: [ranking] must be a table")
        try:   # after [[layout]]: a type weight may name a type the layout defines
            cfg.ranking = RankingConfig.from_dict(ranking, cfg.doc_types)
        except UserError as e:
            e.message = f"invalid config {path}: {e.message}"
            raise
    if raw.get("redact") is not None:  # [redact] disable / secret_hashes / deny (indexer/redact.py)
        cfg.redact = RedactionPolicy.from_config(raw["redact"], path)
    _memory_tool_settings(cfg, raw, path)
    if with_roots:
        cfg.conversations, cfg.finds_conversations = _conversation_roots(raw, path, conversation_args)
        cfg.code = _code_roots(raw, path, code_args)
    return cfg


def _code_roots(raw: dict, path: Path, args: list[str] | None) -> list[Root]:
    """[code] roots (or --code, which wins): source folders, opt-in."""
    table = raw.get("code", {})
    if not isinstance(table, dict):
        raise UserError(f"invalid config {path}: [code] must be a table", param="code")
    configured = table.get("roots", [])
    if not isinstance(configured, list) or not all(isinstance(r, str) for r in configured):
        raise UserError(f"invalid config {path}: [code] roots must be a list of folder paths", param="code",
                        hint='roots = ["~/code/app"]')
    if args:
        return make_roots(args, kind=CODE)
    return make_roots(configured, source=path, kind=CODE) if configured else []


def _conversation_roots(raw: dict, path: Path, args: list[str] | None) -> tuple[list[Root], bool]:
    """[conversations] roots (or --conversations, which wins), and when neither names one and
    `find` is not false, the current project's Claude Code folders if it has some (claude_folders);
    with whether they were found by themselves (then a long-lived client looks again)."""
    table = raw.get("conversations", {})
    if not isinstance(table, dict):
        raise UserError(f"invalid config {path}: [conversations] must be a table", param="conversations")
    configured = table.get("roots", [])
    if not isinstance(configured, list) or not all(isinstance(r, str) for r in configured):
        raise UserError(f"invalid config {path}: [conversations] roots must be a list of folder paths",
                        param="conversations", hint='roots = ["~/.claude/projects/-home-me-code-app"]')
    find = table.get("find", True)
    if not isinstance(find, bool):
        raise UserError(f"invalid config {path}: [conversations] find must be true or false", param="conversations")
    if args:
        return make_roots(args, kind=CONVERSATIONS), False
    if configured:
        return make_roots(configured, source=path, kind=CONVERSATIONS), False
    if not find:
        return [], False
    return found_conversations(), True


def found_conversations(project: Path | None = None) -> list[Root]:
    """The Claude Code transcript folders of `project` (default: this session's, _project_folder)
    as conversation roots; [] when it has none (yet). A few `stat`s: cheap enough for every request."""
    found = claude_folders(project or _project_folder())
    try:
        return make_roots(found, kind=CONVERSATIONS) if found else []
    except UserError:   # a folder removed between the look and now: looked for again next time
        return []


def _project_folder() -> Path | None:
    """The project a session works in: CLAUDE_PROJECT_DIR (Claude Code sets it), else the working folder."""
    try:
        return Path(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())
    except OSError:   # the working folder was deleted
        return None


def claude_projects_dirs() -> list[Path]:
    """Where Claude Code keeps its projects' transcripts: `$CLAUDE_CONFIG_DIR/projects` (several
    folders, comma-separated, are allowed), else `~/.claude/projects` and `~/.config/claude/projects`."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    if env:
        return [Path(p.strip()).expanduser() / "projects" for p in env.split(",") if p.strip()]
    home = _home()
    return [] if home is None else [home / ".claude" / "projects", home / ".config" / "claude" / "projects"]


def project_slug(folder: Path) -> str:
    """The name Claude Code gives a project's folder: its path with every character that is not a
    letter or digit replaced by `-` (lossy: the real path is in each transcript line's `cwd`)."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in str(folder))


def project_and_parents(folder: Path) -> list[Path]:
    """A project folder and the folders above it up to (not including) the home folder or `/`: where
    Claude Code may have been started for it (its transcript folder is named after that one)."""
    out = []
    for f in (folder, *folder.parents):
        if too_wide(f):
            break
        out.append(f)
    return out


def claude_folders(project: Path | None) -> list[Path]:
    """The Claude Code transcript folders of `project` (or of the nearest folder above it that has
    some: Claude Code may have been started at the repository's top) — one in each projects folder
    that has it (claude_projects_dirs: Claude Code may have written to either over time), or []."""
    if project is None:
        return []
    try:
        project = project.resolve()
    except OSError:
        return []
    bases = [b for b in claude_projects_dirs() if b.is_dir()]
    for folder in project_and_parents(project):
        found = [base / project_slug(folder) for base in bases if (base / project_slug(folder)).is_dir()]
        if found:
            return list(dict.fromkeys(f.resolve() for f in found))
    return []


def _memory_tool_settings(cfg: Config, raw: dict, path: Path) -> None:
    """[log] queries / path, [verify] repos, [metrics] textfile."""
    def table(name: str) -> dict:
        t = raw.get(name, {})
        if not isinstance(t, dict):
            raise UserError(f"invalid config {path}: [{name}] must be a table")
        return t

    def a_path(value: object, what: str) -> Path:
        if not isinstance(value, str) or not value.strip():
            raise UserError(f"invalid config {path}: {what} must be a path string")
        p = Path(value).expanduser()
        return p if p.is_absolute() else (path.parent / p)

    log_t = table("log")
    if "queries" in log_t:
        if not isinstance(log_t["queries"], bool):
            raise UserError(f"invalid config {path}: [log] queries must be true or false")
        cfg.log_queries = log_t["queries"]
    if "path" in log_t:
        cfg.query_log = a_path(log_t["path"], "[log] path")
    repos = table("verify").get("repos", [])
    if not isinstance(repos, list) or not all(isinstance(r, str) for r in repos):
        raise UserError(f"invalid config {path}: [verify] repos must be a list of git repository paths")
    cfg.verify_repos = [a_path(r, "[verify] repos") for r in repos]
    metrics_t = table("metrics")
    if "textfile" in metrics_t:
        cfg.metrics_textfile = a_path(metrics_t["textfile"], "[metrics] textfile")


def file_unwritable(path: Path) -> str | None:
    """Why a file at `path` could not be appended to (the query log at `[log] path`), or None —
    tried for real, so a folder no one may create (under /proc, below a file, on a read-only mount)
    is said whoever runs it; nothing is left behind: a probe file beside it and the folders made
    for it are removed again."""
    import tempfile

    path = Path(path)
    made: list[Path] = []
    try:
        if path.is_dir():
            return "it is a folder"
        if path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
            return None
        missing, folder = [], path.parent
        while not folder.exists() and folder != folder.parent:
            missing.append(folder)
            folder = folder.parent
        for d in reversed(missing):
            os.mkdir(d, 0o700)
            made.append(d)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
        return None
    except OSError as e:
        return f"{e.strerror or type(e).__name__}: {e.filename or path}"
    finally:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                os.rmdir(d)


def _parse_layout(layout: object, path: Path) -> tuple[tuple[str, str], ...]:
    """`[[layout]] glob = "notes/**"  type = "doc"` rules; first match wins; a catch-all is kept last."""
    if not isinstance(layout, list):
        raise UserError(f"invalid config {path}: layout must be an array of tables [[layout]]")
    rules = []
    for item in layout:
        if not isinstance(item, dict) or not isinstance(item.get("glob"), str) or not isinstance(item.get("type"), str):
            raise UserError(f"invalid config {path}: each [[layout]] needs glob = \"...\" and type = \"...\"")
        rules.append((item["glob"], item["type"]))
    if not any(g in ("*", "**") for g, _ in rules):
        rules.append(("*", "doc"))
    return tuple(rules)
