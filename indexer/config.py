"""Where things live and what the user configured.

Paths follow platformdirs (DESIGN.md): config in the user config dir, one index per corpus under
the user data dir, the daemon socket in the runtime dir. Each has an environment override so
tests and odd setups never touch a real home directory.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from .errors import UserError
from .rank import RankingConfig
from .redact import RedactionPolicy  # [redact]: secret patterns, hash file, path denylist

APP = "remembrancer"

DEFAULT_LAYOUT: tuple[tuple[str, str], ...] = (
    ("journal/**", "journal"),
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


def config_path() -> Path:
    env = os.environ.get("REMEMBRANCER_CONFIG")
    return Path(env) if env else Path(platformdirs.user_config_dir(APP)) / "config.toml"


def data_dir() -> Path:
    env = os.environ.get("REMEMBRANCER_DATA_DIR")
    return Path(env) if env else Path(platformdirs.user_data_dir(APP))


def socket_path() -> Path:
    env = os.environ.get("REMEMBRANCER_SOCKET")
    if env:
        return Path(env)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime else Path(platformdirs.user_runtime_dir())
    return base / APP / "daemon.sock"


@dataclass(frozen=True)
class Root:
    """One corpus root: a git checkout or a plain folder."""

    name: str
    path: Path


@dataclass
class Config:
    roots: list[Root] = field(default_factory=list)
    excludes: tuple[str, ...] = DEFAULT_EXCLUDES
    max_file_bytes: int = MAX_FILE_BYTES
    model: str | None = None  # None → the default packaged model; else a model directory
    layout: tuple[tuple[str, str], ...] = DEFAULT_LAYOUT
    ranking: RankingConfig = field(default_factory=RankingConfig)
    redact: RedactionPolicy = field(default_factory=RedactionPolicy)  # see indexer/redact.py
    log_queries: bool = True              # [log] queries: the local query log (indexer/querylog.py), opt-out
    query_log: Path | None = None         # [log] path; default <data dir>/logs/queries.jsonl
    verify_repos: list[Path] = field(default_factory=list)  # [verify] repos: more git repos `verify` checks
    metrics_textfile: Path | None = None  # [metrics] textfile: Prometheus metrics after each ingest
    source: Path | None = None

    def index_dir(self) -> Path:
        """One index per corpus: named after its roots so two corpora never share a catalog."""
        key = "\n".join(sorted(str(r.path) for r in self.roots))
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        label = "+".join(r.name for r in self.roots)[:40]
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
        return data_dir() / "indexes" / f"{safe}-{digest}"

    @property
    def doc_types(self) -> tuple[str, ...]:
        seen = list(DOC_TYPES)
        for _, t in self.layout:
            if t not in seen:
                seen.append(t)
        return tuple(seen)


def make_roots(paths: list[str | Path]) -> list[Root]:
    """Resolve root folders; names are folder names, made unique when two collide."""
    roots: list[Root] = []
    names: set[str] = set()
    for raw in paths:
        p = Path(raw).expanduser()
        if not p.exists():
            raise UserError(f"root not found: {raw}", hint="pass an existing folder with --root")
        if not p.is_dir():
            raise UserError(f"root is not a folder: {raw}", hint="--root takes a folder of Markdown files")
        p = p.resolve()
        if any(r.path == p for r in roots):
            continue
        name = p.name or "root"
        n, i = name, 2
        while n in names:
            n, i = f"{name}-{i}", i + 1
        names.add(n)
        roots.append(Root(n, p))
    return roots


def _positive_int(value, name: str, path: Path) -> int:
    """A TOML integer >= 1 (a string such as "ten", a float or a bool is refused by name)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"invalid config {path}: {name} must be a whole number of bytes >= 1, got {value!r}",
                        param=name, hint=f"e.g. {name.split('.')[-1]} = 10485760 under [index]")
    return value


# Every key the config file may hold: anything else is a typo, refused with the valid names.
KNOWN_KEYS: dict[str, tuple[str, ...] | None] = {
    "roots": None, "index": ("exclude", "max_file_bytes"), "model": ("path", "compute"),
    "ranking": None, "layout": None, "redact": None,   # checked by their own parsers
    "log": ("queries", "path"), "verify": ("repos",), "metrics": ("textfile",),
}


def _refuse_unknown_keys(raw: dict, path: Path) -> None:
    import difflib

    def refuse(key: str, where: str, valid) -> None:
        near = difflib.get_close_matches(key, list(valid), n=1)
        raise UserError(f"invalid config {path}: unknown {where} {key!r}"
                        + (f" (did you mean {near[0]!r}?)" if near else ""),
                        param=key, options=sorted(valid), hint="fix the name or remove it")

    for key, value in raw.items():
        if key not in KNOWN_KEYS:
            refuse(key, "table" if isinstance(value, dict) else "key", KNOWN_KEYS)
        sub = KNOWN_KEYS[key]
        if sub is not None and isinstance(value, dict):
            for k in value:
                if k not in sub:
                    refuse(k, f"[{key}] key", sub)


def _model_compute(model: dict, path: Path) -> str | None:
    """[model] compute: "float" (the packaged graph as shipped) or "int8" (its int8-compute build,
    indexer/int8_model.py: faster, other vectors, its own model contract)."""
    from .embed import COMPUTES, INT8_SPEC

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


def load_config(root_args: list[str] | None = None) -> Config:
    """Read the TOML config (if any); roots given on the command line win over configured ones."""
    path = config_path()
    raw: dict = {}
    if path.exists():
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"invalid config {path}: {e}", hint="fix the TOML syntax or move the file away")
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
    if root_args:
        cfg.roots = make_roots(root_args)
    elif roots:
        cfg.roots = make_roots(roots)
    excludes = index.get("exclude", [])
    if not isinstance(excludes, list) or not all(isinstance(e, str) for e in excludes):
        raise UserError(f"invalid config {path}: [index] exclude must be a list of gitignore patterns")
    cfg.excludes = DEFAULT_EXCLUDES + tuple(excludes)
    if "max_file_bytes" in index:
        cfg.max_file_bytes = _positive_int(index["max_file_bytes"], "index.max_file_bytes", path)
    model = raw.get("model", {})
    if isinstance(model, dict) and model.get("path"):
        cfg.model = str(Path(model["path"]).expanduser())
    if isinstance(model, dict) and "compute" in model:
        cfg.model = _model_compute(model, path)
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
    return cfg


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
