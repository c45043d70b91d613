"""bench/eval_all.py --loco: leave one corpus out. Each swept value is chosen on the sets other than the
one held out, and the held-out set's questions right at it are compared with the shipped value's."""

from __future__ import annotations

from tests.search.test_evaluate import bench_module


def results_of(right: dict[str, dict[str, int]], key: str, suffix: str = "") -> dict:
    """A results dict as eval_all.main makes it: per set, per swept row, the questions right."""
    return {s: {f"={key}={text}{suffix}": {"right": n} for text, n in by_value.items()} for s, by_value in right.items()}


def test_the_value_is_chosen_on_the_other_sets_only():
    """Held out, mm-v1 would pick 0 by itself (and all three sets together would too); the other two
    pick 0.2, so 0.2 is what mm-v1 is scored at: +2 against the shipped 0.1."""
    loco = bench_module("eval_all").loco
    right = {"mm-v1.dev": {"0": 30, "0.1": 10, "0.2": 12},
             "qmd": {"0": 5, "0.1": 5, "0.2": 8},
             "memory-dev": {"0": 5, "0.1": 6, "0.2": 7}}
    sweeps = {"detail_margin": (0.1, [("0", 0), ("0.1", 0.1), ("0.2", 0.2)])}
    table = loco(results_of(right, "detail_margin"), sweeps)
    assert table["sets"] == ["mm-v1.dev", "qmd", "memory-dev"]
    assert table["rows"]["detail_margin"] == {"mm-v1.dev": ("0.2", 2),    # qmd + mem: 0 → 10, 0.1 → 11, 0.2 → 15
                                              "qmd": ("0", 0),            # mm-v1 + mem: 0 → 35
                                              "memory-dev": ("0", -1)}    # mm-v1 + qmd: 0 → 35
    assert table["total"] == {"mm-v1.dev": 2, "qmd": 0, "memory-dev": -1}


def test_ties_go_to_the_shipped_value_else_the_nearest_else_the_smaller():
    loco = bench_module("eval_all").loco
    values = [("0", 0), ("0.05", 0.05), ("0.1", 0.1), ("0.15", 0.15), ("0.3", 0.3)]
    sweeps = {"detail_margin": (0.1, values)}
    # 0.05, 0.15 and 0.3 tie above the shipped 0.1: 0.05 and 0.15 are as near it, 0.05 the smaller
    right = {"a": {"0": 4, "0.05": 5, "0.1": 3, "0.15": 5, "0.3": 5}, "b": {"0": 1, "0.05": 2, "0.1": 1, "0.15": 2, "0.3": 2}}
    assert loco(results_of(right, "detail_margin"), sweeps)["rows"]["detail_margin"] == {"a": ("0.05", 2), "b": ("0.05", 1)}
    # the shipped value among the tied: kept, nothing gained or lost
    right["a"]["0.1"], right["b"]["0.1"] = 5, 2
    assert loco(results_of(right, "detail_margin"), sweeps)["rows"]["detail_margin"] == {"a": ("0.1", 0), "b": ("0.1", 0)}
    # a value that is not a number: the first of the tied as listed
    words = {"MODE": ("b", [("c", "c"), ("a", "a"), ("b", "b")])}
    right = {"x": {"a": 3, "b": 1, "c": 3}, "y": {"a": 3, "b": 1, "c": 3}}
    assert loco(results_of(right, "MODE"), words)["rows"]["MODE"] == {"x": ("c", 2), "y": ("c", 2)}


def test_the_rephrasings_table_reads_the_alt_rows_of_the_sets_that_have_them():
    loco = bench_module("eval_all").loco
    sweeps = {"rule_swing": (0.2, [("0.1", 0.1), ("0.2", 0.2)])}
    results = results_of({"a": {"0.1": 9, "0.2": 1}, "b": {"0.1": 9, "0.2": 1}, "c": {"0.1": 0, "0.2": 0}}, "rule_swing")
    for s, by_value in {"a": {"0.1": 1, "0.2": 3}, "b": {"0.1": 2, "0.2": 5}}.items():   # c has no rephrasings
        results[s].update(results_of({s: by_value}, "rule_swing", "+alt")[s])
    table = loco(results, sweeps, "+alt")
    assert table["sets"] == ["a", "b"]
    assert table["rows"]["rule_swing"] == {"a": ("0.2", 0), "b": ("0.2", 0)}
    assert loco(results, sweeps)["rows"]["rule_swing"] == {"a": ("0.1", 8), "b": ("0.1", 8), "c": ("0.1", 0)}


def test_several_constants_sum_per_set(capsys):
    eval_all = bench_module("eval_all")
    results = results_of({"mm-v1.dev": {"0": 3, "1": 1}, "qmd": {"0": 2, "1": 1}}, "k")
    for s, by_value in {"mm-v1.dev": {"0.5": 1, "0.9": 4}, "qmd": {"0.5": 0, "0.9": 2}}.items():
        results[s].update(results_of({s: by_value}, "W")[s])
    sweeps = {"k": (1, [("0", 0), ("1", 1)]), "W": (0.5, [("0.5", 0.5), ("0.9", 0.9)])}
    table = eval_all.loco(results, sweeps)
    assert table["total"] == {"mm-v1.dev": 2 + 3, "qmd": 1 + 2}
    eval_all.print_loco(table, sweeps, "leave one corpus out", markdown=True)
    out = capsys.readouterr().out
    assert "| constant (shipped) | mm-v1 | qmd |" in out
    assert "| k (1) | 0: +2 | 0: +1 |" in out and "| all constants | +5 | +3 |" in out
