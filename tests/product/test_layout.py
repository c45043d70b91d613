"""The dependency rule of the code, checked on its import statements (ast; nothing is imported).

The rule:

1. **No import cycles** between our modules. An import inside a function counts like one at the top
   of the file: hiding a cycle in a function does not remove it. Only third-party imports made
   inside a function to keep start-up cheap (onnxruntime, tokenizers, psycopg, tantivy, …) are
   outside the rule, since they are not ours.
2. **Layers, lowest first**: `remembrancer.wire` (the daemon's socket path, framing and client) →
   `indexer` → `hooks` → `daemon` → `mcp_server` → `cli`. A package imports only from its own layer
   and those below it, so `indexer` never imports `daemon`, `mcp_server`, `cli` or `hooks`.
3. **Inside `indexer`**: the building blocks — `indexer.store`, `indexer.ingest`, `indexer.models` —
   never import what is built on them: `indexer.search`, `indexer.memory`, `indexer.engine`,
   `indexer.api`, `indexer.team`.
4. **The hook scripts stay light**: `remembrancer.wire`, `remembrancer.build` (the build fingerprint
   the Claude Code hook sends) and the scripts git and Claude Code run on every commit and prompt
   (`hooks.notify`, `hooks.claude_code`) import only the standard library and each other. Two lazy exceptions, named in LAZY_EXCEPTIONS: wire
   imports platformdirs only without XDG_RUNTIME_DIR, and the git hook loads the team store's
   NOTIFY only when a store is configured.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.support.paths import PROJECT as REPO
PACKAGES = {"remembrancer": "remembrancer", "indexer": "remembrancer.indexer", "hooks": "remembrancer.hooks",
            "daemon": "remembrancer.daemon", "mcp_server": "remembrancer.mcp_server", "cli": "remembrancer.cli"}
LAYERS = ("remembrancer.wire", "remembrancer.indexer", "remembrancer.hooks", "remembrancer.daemon",
          "remembrancer.mcp_server", "remembrancer.cli")
BUILDING_BLOCKS = ("remembrancer.indexer.store", "remembrancer.indexer.ingest", "remembrancer.indexer.models")
BUILT_ON_THEM = ("remembrancer.indexer.search", "remembrancer.indexer.memory", "remembrancer.indexer.engine",
                 "remembrancer.indexer.api", "remembrancer.indexer.team")
LIGHT = ("remembrancer.wire", "remembrancer.build", "remembrancer.hooks.notify", "remembrancer.hooks.claude_code")
LAZY_EXCEPTIONS = {("remembrancer.wire", "platformdirs"),
                   ("remembrancer.hooks.notify", "remembrancer.indexer.store.postgres.notify")}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of ours: its dotted name → (file, is it a package's __init__)."""
    out = {}
    for folder, package in PACKAGES.items():
        for f in sorted((REPO / folder).rglob("*.py")):
            parts = [p for p in f.relative_to(REPO / folder).with_suffix("").parts if p != "__init__"]
            out[".".join([package, *parts])] = (f, f.name == "__init__.py")
    return out


MODULES = _modules()


def _imports(name: str) -> list[tuple[str, int, bool]]:
    """(imported name, line, inside a function?) of every import in module `name`; `from a import b`
    names a.b when that is a module of ours, else a."""
    path, is_package = MODULES[name]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, lazy) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".")[:len(name.split(".")) - child.level + (1 if is_package else 0)]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module
                for a in child.names:
                    full = f"{module}.{a.name}"
                    found.append((full if full in MODULES else module, child.lineno, lazy))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def _ours(imported: str) -> str | None:
    """The module of ours an import names (its nearest enclosing one), else None."""
    while imported not in MODULES and "." in imported:
        imported = imported.rsplit(".", 1)[0]
    return imported if imported in MODULES and imported != "remembrancer" else None


GRAPH = {m: {t for i, _, _ in _imports(m) if (t := _ours(i)) and t != m} for m in MODULES}


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _layer(module: str) -> int | None:
    hits = [i for i, p in enumerate(LAYERS) if _under(module, (p,))]
    return max(hits) if hits else None


def test_no_import_cycles():
    """Tarjan's strongly connected components: any of more than one module is a cycle."""
    graph = GRAPH
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * len(MODULES)))
    try:
        for v in sorted(graph):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(old)
    described = ["; ".join(f"{a} → {', '.join(sorted(graph[a] & set(c)))}" for a in c) for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_a_layer_imports_only_itself_and_the_layers_below():
    upward = [f"{m} imports {t}" for m in sorted(GRAPH) for t in sorted(GRAPH[m])
              if _layer(m) is not None and _layer(t) is not None and _layer(t) > _layer(m)]
    assert not upward, "\n".join(upward)


def test_the_indexers_building_blocks_never_import_what_is_built_on_them():
    upward = [f"{m} imports {t}" for m in sorted(GRAPH) if _under(m, BUILDING_BLOCKS)
              for t in sorted(GRAPH[m]) if _under(t, BUILT_ON_THEM)]
    assert not upward, "\n".join(upward)


def test_the_hook_scripts_and_the_wire_import_only_the_standard_library_and_the_wire():
    bad = []
    for m in LIGHT:
        for imported, line, lazy in _imports(m):
            top = imported.split(".")[0]
            if top in sys.stdlib_module_names or _under(imported, LIGHT) or imported == "remembrancer":
                continue
            if lazy and (m, imported) in LAZY_EXCEPTIONS:
                continue
            bad.append(f"{m}:{line} imports {imported}" + (" (in a function)" if lazy else ""))
    assert not bad, "\n".join(bad)


def test_the_rule_sees_every_package():
    """A folder added without a mapping here would go unchecked."""
    mapped = set(PACKAGES) | {"tests", "bench", "docs", "examples", "systemd", "build", "remembrancer.egg-info"}
    folders = {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")
               and any(p.glob("*.py"))}
    assert folders <= mapped, f"unmapped source folders: {sorted(folders - mapped)}"
    assert {"remembrancer.wire", "remembrancer.indexer.engine", "remembrancer.hooks.notify"} <= set(MODULES)
