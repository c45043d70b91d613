"""Two signals for "the question's key term is absent from the notes", measured on the dev sets'
answerable and no-answer questions alike (docs/ranking.md, "Measured, not kept", quotes this).

    .venv/bin/python bench/abstention_signals.py [--eval-dir ../shared/eval] [--sets memory-dev …]
        [--data-dir DIR]

1. *Absent compound name*: two adjacent words of the question, neither a stop word, one of them
   capitalised past the question's first word ("Grafana Cloud", "Android SDK"), that the notes never
   write one after the other. Counted per question: flagged or not, answerable or not.
2. *Absent term's grounding*: for each question with a content word the notes never use that is a
   name or a term of art (answer._no_strong_match's notion), that word embedded alone against every
   passage of the five sections shown: the best cosine. A key term the results do not speak of would
   score low; the figure says whether answerable paraphrases score higher.

3. *Rephrasings' agreement* (with `--alternates`): the question and each of its rephrasings
   searched alone — how many put first the document the search with all of them puts first. A
   question the notes cannot answer might send each phrasing somewhere else.
4. *Words the shown sections lack*: the share, weighted by IDF, of the question's words (four
   letters or more) that the notes use but none of the first three results holds.

Signals 3 and 4 are counted on the rows the shipped search answers (not abstained): a signal that
flags many answerable rows would withhold right answers.

5. *Absent names by kind*: each question using a name the notes never write (answer._no_strong_match's
   notion), the name a term of art or an everyday word (terms.is_rare against the model's vocabulary),
   with the best semantic match of the five sections shown: where `ABSTAIN_DENSE_RARE_NAME` comes from.

Searches go through the MCP `search` path (api.do_search), the index of bench/eval_all.py's cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remembrancer.indexer import terms  # noqa: E402
from remembrancer.indexer.api import do_search  # noqa: E402
from remembrancer.indexer.search import answer as search  # noqa: E402
from remembrancer.indexer.search.evaluate import EvalSession  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SETS = ("mm-v1.dev", "mm-v2.dev", "docs-dev", "qmd", "memory-dev", "memory-dev-2", "memory-dev-3")
STOP = frozenset("the a an of to in on for and or is are was were be do does did how what which who when where why "
                 "with from at by it its our we i my me you your that this these those there their they them as if "
                 "can should would could will into about after before than then so not no".split())
WORD_RE = re.compile(r"[A-Za-z][\w]*")


def absent_compounds(query: str, corpus_text: str) -> list[str]:
    """Adjacent word pairs naming a thing (one capitalised past the first word) the notes never write."""
    words = WORD_RE.findall(query)
    out = []
    for i, (a, b) in enumerate(zip(words, words[1:])):
        if a.lower() in STOP or b.lower() in STOP or not ((i > 0 and a[0].isupper()) or b[0].isupper()):
            continue
        if f" {a.lower()} {b.lower()} " not in corpus_text:
            out.append(f"{a} {b}")
    return out


def key_terms(view, query: str) -> list[str]:
    """The question's words the notes never use that are names or terms of art."""
    common = search._common_words(view)
    names = {w.lower() for w in terms.name_words(query)}
    return [w for w in dict.fromkeys(terms.content_words(query)) if not search._word_occurs(view, w)
            and (w in names or (len(w) >= 4 and terms.is_rare(w, common)))]


def grounding(view, word: str, shown: list[dict]) -> float:
    """The best cosine between `word` alone and any passage of the shown sections."""
    ids = [s.id for r in shown for s in view.catalog.sections(r["path"]) if s.heading == r["heading"]]
    _, vectors = view.catalog.passage_vectors(sorted(view.catalog.passage_ids_in(ids)))
    return float((vectors @ view.embedder.embed_query(word)).max()) if len(vectors) else 0.0


def shown_of(out: dict) -> list[dict]:
    """The results of a search answer, or what it would have shown had it not abstained."""
    return (out["results"] or out.get("best_weak") or [])


def agreement(view, query: str, alternates: list[str], first_doc: str) -> int:
    """How many of the phrasings, each searched alone, put `first_doc` first."""
    firsts = [(shown_of(do_search(view, {"query": q, "limit": 5})) or [{"path": None}])[0]["path"]
              for q in [query, *alternates]]
    return sum(path == first_doc for path in firsts)


def lacking_share(view, query: str, shown: list[dict], df: dict[str, int], n: int) -> float:
    """The IDF share of the question's words the notes use that none of `shown` holds."""
    texts = [f"{s.heading} {s.content}".lower() for r in shown
             for s in view.catalog.sections(r["path"]) if s.heading == r["heading"]]
    held = set(terms.WORD_RUN_RE.findall(" ".join(texts)))
    used = [w for w in dict.fromkeys(terms.content_words(query)) if len(w) >= 4 and df.get(w)]
    idf = {w: math.log(1 + n / df[w]) for w in used}
    return sum(idf[w] for w in used if w not in held) / (sum(idf.values()) or 1.0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--data-dir", default=str(ROOT / "bench" / "results" / "index-cache"))
    ap.add_argument("--alternates", help="the folder of rephrasings (<set>.json): signal 3")
    args = ap.parse_args()
    os.environ["REMEMBRANCER_DATA_DIR"] = args.data_dir
    flagged = {True: [0, 0], False: [0, 0]}   # answerable? → [flagged, all]
    rows = []
    answered: list[tuple[bool, int | None, float]] = []   # (answerable, agreement, lacking share)
    named: list[tuple] = []   # (answerable, a term of art among them, best dense, set, absent names, query)
    for name in args.sets:
        alts_file = Path(args.alternates or "", f"{name}.json")
        alts = json.loads(alts_file.read_text()) if args.alternates and alts_file.exists() else {}
        with EvalSession(str(Path(args.eval_dir) / "queries" / f"{name}.jsonl"), None) as session:
            view = session.engine.view()
            lowered = view.lowered_sections()
            text = " " + re.sub(r"\W+", " ", " ".join(c for _, _, c, _ in lowered)) + " "
            df: dict[str, int] = {}
            for _, h, c, _ in lowered:
                for w in set(terms.WORD_RUN_RE.findall(f"{h} {c}")):
                    df[w] = df.get(w, 0) + 1
            for case in session.cases:
                p = {"query": case.query, "limit": 5, **({"alternates": alts[case.id]} if alts.get(case.id) else {})}
                out = do_search(view, p)
                if not out["no_strong_match"] and out["results"]:
                    agree = (agreement(view, case.query, alts[case.id], out["results"][0]["path"])
                             if alts.get(case.id) else None)
                    answered.append((case.answerable, agree,
                                     lacking_share(view, case.query, out["results"][:3], df, len(lowered))))
                compounds = absent_compounds(case.query, text)
                flagged[case.answerable][0] += bool(compounds)
                flagged[case.answerable][1] += 1
                names = [w for w in terms.name_words(case.query) if not search._word_occurs(view, w)]
                if names:
                    shown = shown_of(do_search(view, {"query": case.query, "limit": 5}))[:5]
                    best = max((r.get("scores", {}).get("dense", 0.0) for r in shown), default=0.0)
                    vocabulary = search._common_words(view)
                    named.append((case.answerable, any(terms.is_rare(w, vocabulary) for w in names), best, name,
                                  names, case.query))
                absent = key_terms(view, case.query)
                if absent:
                    out = do_search(view, {"query": case.query, "limit": 5})
                    shown = shown_of(out)[:5]
                    rows.append((case.answerable, name, case.query,
                                 {w: round(grounding(view, w, shown), 2) for w in absent}))
        print(f"{name}: done", file=sys.stderr, flush=True)
    for answerable in (False, True):
        n, total = flagged[answerable]
        print(f"absent compound name: {n} of {total} {'answerable' if answerable else 'no-answer'} questions")
    print("\non the rows the search answers (each: no-answer rows flagged, answerable rows flagged):")
    for label, flag in (("rephrasings agreeing on the first document, at most 1 of the phrasings",
                         lambda agree, share: agree is not None and agree <= 1),
                        ("the question's words the first three results lack, IDF share ≥ 0.5",
                         lambda agree, share: share >= 0.5),
                        ("both", lambda agree, share: agree is not None and agree <= 1 and share >= 0.5)):
        counts = {a: (sum(flag(g, sh) for x, g, sh in answered if x == a), sum(x == a for x, _, _ in answered))
                  for a in (False, True)}
        print(f"  {label}: no-answer {counts[False][0]} of {counts[False][1]}, "
              f"answerable {counts[True][0]} of {counts[True][1]}")
    print("\nabsent names, by kind, with the best semantic match of the five shown sections:")
    for rare in (True, False):
        print(f"  {'a term of art' if rare else 'everyday words only'}:")
        for answerable, _, best, name, names, query in sorted((r for r in named if r[1] == rare), key=lambda r: r[2]):
            print(f"    {best:.3f}  {'answerable' if answerable else 'no-answer '}  {name:<13} {names}  "
                  f"{terms.elide(query, 60)}")
    print("\nabsent key terms, their best cosine against the shown sections (no-answer rows first):")
    for answerable, name, query, scores in sorted(rows, key=lambda r: (r[0], min(r[3].values()))):
        print(f"  {'answerable' if answerable else 'no-answer '}  {name:<13} {scores}  {terms.elide(query, 70)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
