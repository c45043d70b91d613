"""Redaction audit over the dev corpora: planted secrets caught, and every other redaction listed.

    .venv/bin/python bench/redaction_audit.py [--eval-dir ../shared/eval] [--corpora memory-dev ...] [-v]
    .venv/bin/python bench/redaction_audit.py --random-aws-keys 100000

Runs the store-time redaction (the default families, as `index` applies them) over every Markdown
file of each corpus under <eval-dir>/corpora, and over the text of transcripts-dev's JSONL lines
(every string of each line's JSON, as a transcript reader would see it). Prints per corpus the lines
read and every redaction: family, file:line, and the redacted text's *shape* (letters → a/A, digits
→ 9; never a planted secret whole). Then checks every planted secret the eval's `*-secrets.md` /
`*.SECRETS.md` files list (their table's value column) is gone from the redacted text, and counts
as false every redaction that overlaps no planted secret unless its shape is listed in JUDGED (real
secret shapes the corpora hold besides the planted ones). docs/redaction.md quotes the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remembrancer.indexer.redact import DEFAULT_REDACTOR, _elsewhere, _strings, removed_pieces  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SECRET_FILES = {"memory-dev": "memory-dev-secrets.md", "memory-dev-2": "memory-dev-2-secrets.md",
                "memory-dev-3": "memory-dev-3-secrets.md", "transcripts-dev": "transcripts-dev.SECRETS.md"}
# Redactions of text that is no planted secret but is a real secret's shape: (corpus, family) → why.
# They are listed, not counted as false.
JUDGED: dict[tuple[str, str], str] = {
    ("transcripts-dev", "url_credentials"): "a password in a connection URL (the local `plotline:plotline` "
                                            "development database): a real credential shape",
}


def shape(s: str) -> str:
    """Letters → a/A, digits → 9, the rest kept, long runs shortened: enough to judge, never the value."""
    out = re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"[0-9]", "9", s)))
    out = re.sub(r"([aA9])\1{3,}", lambda m: f"{m.group(1)}{{{len(m.group(0))}}}", out)
    return out if len(out) <= 60 else out[:57] + "…"


# -- the planted secrets ---------------------------------------------------------------------------

_TICKS = re.compile(r"`([^`]+)`")
_DSN_PW = re.compile(r"^[a-z][a-z0-9+.-]*://[^:/@\s]*:([^@\s]+)@")


def planted(path: Path) -> list[str]:
    """The values of a secrets file's table: the backticked pieces of its value column (the last one
    whose header says "value"). A piece after "password" is the secret of a user/password cell; a
    URL's password is the secret of a DSN; a PEM block counts by its body lines."""
    values: list[str] = []
    col = None
    for line in path.read_text().splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if col is None:
            if any("value" in c.lower() for c in cells):
                col = max(i for i, c in enumerate(cells) if "value" in c.lower())
            continue
        if set(cells[0]) <= set("-: ") or len(cells) <= col:
            continue
        cell = cells[col]
        m = re.search(r"password `([^`]+)`", cell)
        pieces = [m.group(1)] if m else _TICKS.findall(cell)
        for p in pieces:
            if p.startswith("-----"):
                continue
            dsn = _DSN_PW.match(p)
            values.append(dsn.group(1) if dsn else p)
    return values


# -- redaction, family by family ------------------------------------------------------------------

def redactions(text: str) -> tuple[str, list[tuple[str, int, str]]]:
    """The text redacted family by family as DEFAULT_REDACTOR does, and each redaction: (family, 1-based line, text
    removed). A private-key block counts once, on its marker line, with the lines it emptied."""
    found: list[tuple[str, int, str]] = []
    for fam in DEFAULT_REDACTOR.families:
        new, n = fam.apply(text)
        if not n:
            continue
        new, _ = _elsewhere(text, new, fam.name)
        old_lines, new_lines = text.split("\n"), new.split("\n")
        for i, (a, b) in enumerate(zip(old_lines, new_lines)):
            if a == b or not b.strip():
                continue
            for removed in removed_pieces(a, b):
                if fam.name == "private_key":
                    j = i + 1
                    while j < len(new_lines) and not new_lines[j].strip() and old_lines[j].strip():
                        removed += "\n" + old_lines[j]
                        j += 1
                found.append((fam.name, i + 1, removed))
        text = new
    return text, found


def corpus_texts(corpus: Path):
    """(relative path, text) of every Markdown file, and of every JSONL file as one text: the strings
    of its lines' JSON, one after the other (what a transcript reader would index)."""
    for p in sorted(corpus.rglob("*.md")):
        yield str(p.relative_to(corpus)), p.read_text(encoding="utf-8", errors="replace")
    for p in sorted(corpus.rglob("*.jsonl")):
        strings = [v for line in p.read_text(encoding="utf-8").splitlines() for v in _strings(json.loads(line))]
        yield str(p.relative_to(corpus)), "\n".join(strings)


def audit(corpus: Path, secrets: list[str], verbose: bool) -> dict:
    lines = 0
    leaked, seen = set(), set()
    false, judged, hits = [], [], 0
    for rel, text in corpus_texts(corpus):
        lines += text.count("\n") + 1
        _, found = redactions(text)
        redacted = DEFAULT_REDACTOR.redact(text)[0]   # what is stored: the leak check reads this
        seen.update(s for s in secrets if s in text)
        leaked.update(s for s in secrets if s in redacted)
        for family, line, removed in found:
            hits += 1
            src = text.split("\n")[line - 1]
            key = (corpus.name, family)
            is_planted = any(s in removed or (removed in s and s in src) for s in secrets)
            where = f"{rel}:{line}"
            kind = "planted" if is_planted else "judged" if key in JUDGED else "FALSE"
            if kind == "FALSE":
                false.append((family, where, shape(removed)))
            elif kind == "judged":
                judged.append((family, where, shape(removed), JUDGED[key]))
            if verbose or kind != "planted":
                print(f"  {kind:<7} {family:<16} {where}  {shape(removed)}")
    missed = leaked | (set(secrets) - seen)  # a value the corpus does not hold: the table was misread
    caught = [s for s in secrets if s not in missed]
    return {"corpus": corpus.name, "lines": lines, "redactions": hits, "planted": len(secrets),
            "caught": len(caught), "missed": [shape(s) for s in sorted(missed)], "false": false, "judged": judged}


def random_aws_keys(n: int, seed: int = 7) -> tuple[int, int]:
    """(missed, n): `n` random 40-character secret access keys (AWS's alphabet, `A–Z a–z 0–9 / +`),
    each alone in a table cell with no key id on its line, run through the store-time redaction; a
    key still in the text is missed (the `aws` family judges a lone key by its shape: docs/redaction.md)."""
    import random

    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+"
    missed = 0
    for _ in range(n):
        key = "".join(rng.choice(alphabet) for _ in range(40))
        missed += key in DEFAULT_REDACTOR.redact(f"| ci | {key} |")[0]
    return missed, n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", default=str(next((d for d in (ROOT.parent / "shared" / "eval",
                                                                ROOT.parent.parent / "shared" / "eval") if d.is_dir()),
                                                       ROOT.parent / "shared" / "eval")))
    ap.add_argument("--corpora", nargs="*")
    ap.add_argument("-v", "--verbose", action="store_true", help="also list the planted secrets' redactions")
    ap.add_argument("--random-aws-keys", type=int, metavar="N",
                    help="only: how many of N random AWS secret keys standing alone the redaction misses")
    args = ap.parse_args()
    if args.random_aws_keys:
        missed, n = random_aws_keys(args.random_aws_keys)
        print(f"random AWS secret keys standing alone: {missed} of {n} missed (1 in {n // max(missed, 1):,})")
        return 0
    eval_dir = Path(args.eval_dir)
    names = args.corpora or sorted(p.name for p in (eval_dir / "corpora").iterdir() if p.is_dir())
    results = []
    for name in names:
        print(name)
        secrets = planted(eval_dir / SECRET_FILES[name]) if name in SECRET_FILES else []
        results.append(audit(eval_dir / "corpora" / name, secrets, args.verbose))
    print()
    total_lines = sum(r["lines"] for r in results)
    total_false = sum(len(r["false"]) for r in results)
    for r in results:
        rate = 10000 * len(r["false"]) / max(r["lines"], 1)
        print(f"{r['corpus']:<18} lines {r['lines']:>6}  redactions {r['redactions']:>3}  planted caught "
              f"{r['caught']}/{r['planted']}  false {len(r['false']):>2} ({rate:.1f} per 10k lines)"
              + (f"  MISSED {r['missed']}" if r["missed"] else ""))
    print(f"{'all':<18} lines {total_lines:>6}  planted caught {sum(r['caught'] for r in results)}/"
          f"{sum(r['planted'] for r in results)}  false {total_false} "
          f"({10000 * total_false / max(total_lines, 1):.2f} per 10k lines)")
    return 0 if all(not r["missed"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
