"""Adversarial inputs shared by tests/product/test_adversarial.py and bench/bench_robustness.py.

Each generator is a class of input that once broke a promise (issue 14): YAML alias bombs,
long lines of every character class the patterns touch, and every regular expression the
package compiles, found by walking its modules (a new pattern is covered without registering it).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from pathlib import Path

from remembrancer.indexer.config import DEFAULT_LAYOUT, Root
from remembrancer.indexer.ingest import meta

# The subpackages are mapped folders (pyproject's package-dir), so each is walked on its own.
SUBPACKAGES = ("remembrancer.indexer", "remembrancer.daemon", "remembrancer.hooks", "remembrancer.mcp_server",
               "remembrancer.cli")
# One unit per character class a pattern touches; a pathological line repeats one unit.
LINE_UNITS = [
    "a-", "a", "A", "1", "0f", ".", "/", " ", "\t", "=", '"', "'", "`", "*", "#", "-", ":", "@", "(", "[",
    "<", "a.", "a_", "-a", "a:", "a@", "a:/", "a/", "a=", "x:a", "a1", "aA0/+", "aA0/+=", "a(", "[a ",
    "[[", "](", "<!--", "```", "---", "sk-", "eyJ", "a:a@", "a://", "ab://a:", "password=", "secret: ",
    "--token ", "bearer ", "Bearer a", "still ", "check ", "did ", "how do i ", "a\n", "a\n\n", "> ",
    "- ", "  ", "AKIA", "ghp_", "xoxb-", "0x", "sha256:", "\\", "a,", "a;", "|", "{", "}", "%", "$",
    "A_PASSWORD=", "key ", "curl -u a:", "mysql -p", "redis-cli -a ", "login a password ", "&sig=", "$apr1$",
    "- name: a_TOKEN\n", "a:1:a:a:", "://:a@", "a_srv_", "password for a ", "token is ", "docker login -p ",
    "echo a |",
]


def pathological_line(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def registered_patterns() -> dict[str, re.Pattern]:
    """Every compiled pattern of the package: module globals, and those inside dicts, tuples and
    classes, plus representatives of the patterns built at run time (entity names, literals)."""
    found: dict[str, re.Pattern] = {}
    for name in SUBPACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, name + "."):
            try:
                mod = importlib.import_module(info.name)
            except Exception:  # optional extras (a store backend whose driver is absent)
                continue
            for key, value in vars(mod).items():
                _collect(found, f"{info.name.removeprefix('remembrancer.')}.{key}", value, depth=0)
    from remembrancer.indexer.memory import tools as memory
    from remembrancer.indexer.ingest import meta

    matcher = meta.EntityMatcher([meta.Entity("db1", "hosts/db1.md", ["db-primary", "10.0.0.5"]),
                                  meta.Entity("pg-backup", "services/pg.md", ["pgbackrest"])])
    found["meta.EntityMatcher(instance).regex"] = matcher.regex
    found["memory._Term(instance).regex"] = memory._Term("db1-a").regex
    return found


def _collect(found: dict, name: str, value, depth: int) -> None:
    if isinstance(value, re.Pattern):
        found.setdefault(name, value)
    elif depth < 2 and isinstance(value, dict):
        for k, v in list(value.items())[:50]:
            _collect(found, f"{name}[{k!r}]", v, depth + 1)
    elif depth < 2 and isinstance(value, (tuple, list)):
        for i, v in enumerate(value[:50]):
            _collect(found, f"{name}[{i}]", v, depth + 1)
    elif depth == 0 and isinstance(value, type) and value.__module__.startswith("remembrancer"):
        for k, v in vars(value).items():
            _collect(found, f"{name}.{k}", v, depth + 1)
    elif depth < 2 and type(value).__module__.startswith("remembrancer") and hasattr(value, "__dict__"):
        for k, v in vars(value).items():  # objects holding patterns (rank._InOrder, classes)
            _collect(found, f"{name}.{k}", v, depth + 1)


def _scan(pattern: re.Pattern, text: str) -> None:
    for _ in pattern.finditer(text):  # search from every position: the worst way a pattern is used
        pass


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


SUPERLINEAR = 4.0   # growth_of at factor 16 past which a cost counts as super-linear (~1 linear, ~16 quadratic)


def growth_of(fn, make, small: int = 1000, factor: int = 16, repeats: int = 5) -> float:
    """Cost per unit of `fn` on `make(small * factor)` divided by its cost per unit on `make(small)`
    (each the best of `repeats`; the small input runs `factor` times per timing, so both timings do
    the same work when `fn` is linear). Linear: ~1. Quadratic: ~`factor`. A ratio of two timings
    taken side by side, so a loaded machine does not move it the way it moves a time."""
    short, long = make(small), make(small * factor)

    def many_short():
        for _ in range(factor):
            fn(short)

    return _best(lambda: fn(long), repeats) / max(_best(many_short, repeats), 1e-7)


def growth(pattern: re.Pattern, unit: str, small: int = 1000, factor: int = 16, repeats: int = 5) -> float:
    """growth_of a pattern's scan over a line of `unit` repeated."""
    return growth_of(lambda line: _scan(pattern, line), lambda n: pathological_line(unit, n), small, factor, repeats)


# -- YAML front matter bombs ------------------------------------------------------------------

def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """A ~300-byte front matter whose aliases expand to width**levels strings."""
    lines = ['a0: &a0 "lol"']
    for i in range(1, levels + 1):
        refs = ", ".join(f"*a{i - 1}" for _ in range(width))
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "---\n" + "\n".join(lines) + "\ntitle: bomb\n---\n# Bomb\n\nThe body of the bomb note.\n"


def merge_key_bomb(levels: int = 20) -> str:
    """Merge keys (`<<: *x`) double a mapping per level without any list."""
    lines = ["k0: &k0 {a: 1, b: 2}"]
    for i in range(1, levels + 1):
        lines.append(f"k{i}: &k{i} {{<<: *k{i - 1}, x{i}: *k{i - 1}, y{i}: *k{i - 1}}}")
    return "---\n" + "\n".join(lines) + "\n---\n# Merge bomb\n\nBody text kept.\n"


def huge_front_matter(chars: int = 2_000_000) -> str:
    """A front matter that is plain YAML but megabytes long."""
    n = chars // 24
    return "---\ntags:\n" + "".join(f"  - tag-{i:012d}\n" for i in range(n)) + "---\n# Huge\n\nBody after it.\n"


# What a fuzzed document is prepared under: a root no file is read from, the default layout, no entities.
FUZZ_ROOT = Root("fuzz", Path("/nonexistent-fuzz-root"))
FUZZ_LAYOUT = meta.Layout(DEFAULT_LAYOUT)
FUZZ_MATCHER = meta.EntityMatcher([])
