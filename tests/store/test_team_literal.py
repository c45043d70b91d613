"""The literal index in PostgreSQL (pg_schema migration 8) answers as the local store's FTS5 trigram
index does: `exact` searches, the literal rows, whole-word checks (latest/history) and literal
counts, on the same corpus — short needles, NUL, case, LIKE/regex metacharacters, non-ASCII."""

from __future__ import annotations

import os

import psycopg

from remembrancer.indexer.search import answer as S
from remembrancer.indexer.config import Config, make_roots
from remembrancer.indexer.engine import Engine
from remembrancer.indexer.store.postgres.store import PgStore
from tests.support.corpus import write
from tests.support.team import index_once

FILES = {
    "errors.md": "# Connection errors\n\nERR_CONN_RESET at 10.0.0.1:5432 after `--no-track`.\n\n"
                 "## Retry\n\nerr_conn_reset again; retried 3x.\n",
    "symbols.md": "# 100% done\n\nunder_score, back\\slash, quote's \"double\", [brackets] and (parens) *star*.\n"
                  "Percent 50%_off, a.b.c and ^caret$.\n",
    "unicode.md": "# Ünïcödé CAFÉ\n\nStraße in München; ΣΊΣΥΦΟΣ rolls; the Kelvin sign \u212a and 5\u212a; "
                  "emoji 🚀 launch; ﬁne ligature; İstanbul.\n",
    "nul.md": "# Bytes\n\nbefore\x00after and a\x00b.\n",
    "short.md": "# ab\n\nab cd ef. x y z. k.\n",
}
NEEDLES = ["err_conn", "ERR_CONN_RESET", "Err_Conn_Reset", "10.0.0.1:5432", "--no-track", "100%", "%", "_", "50%_",
           "_sc", "back\\sl", "\\", "quote's \"d", "'", "[brackets]", "(parens)", "*star*", "a.b", "^caret$", ".",
           "café", "CAFÉ", "Café", "straße", "STRASSE", "münchen", "σίσυφος", "ΣΊΣΥΦΟΣ", "k", "5k", "\u212a",
           "🚀", "🚀 l", "ﬁne", "fine", "ab", "a", "cd ef", "a\x00b", "\x00", "after", "\ufffd",
           "zzz-not-there", "retry", "Retry", "x y z", "İstanbul", "istanbul", "i\u0307stanbul"]


def _key(engine, ids):
    rows = engine.catalog.sections_by_id(list(ids))
    return sorted((rows[i].path, rows[i].heading) for i in ids)


def _answers(engine, needle: str) -> dict:
    out = {}
    with engine.view(()) as view:
        low = needle.lower()
        rows = view.literal_rows([low])
        out["rows"] = _key(engine, [i for i, h, c, _ in rows if low in h or low in c])
        out["content_rows"] = _key(engine, [i for i, h, c, _ in view.literal_rows([low], content_only=True)
                                            if low in c])
        out["counts"] = {ci: sorted((_key(engine, [i])[0], n) for i, _, n in
                                    engine.catalog.literal_counts(low if ci else needle, ci)) for ci in (True, False)}
        out["word"] = S._word_occurs(view, needle)
        r = S.search(view, S.SearchRequest(needle, exact=True)).to_json()
        out["exact"] = [(x["path"], x["heading"]) for x in r["results"] or r.get("best_weak", [])]
    return out


def _scanned(engine, needle: str):
    """The literal rows a scan of every section finds (what the index must narrow, never lose)."""
    low = needle.lower()
    with engine.view(()) as view:
        return _key(engine, [i for i, h, c, _ in view.lowered_sections() if low in h or low in c])


def test_the_literal_index_answers_like_the_local_one(tmp_path, data_env, tiny_embedder, pg_url):
    notes = tmp_path / "notes"
    for name, text in FILES.items():
        write(notes, name, text)
    cfg = Config(roots=make_roots([notes]))
    local = Engine(cfg, embedder=tiny_embedder)
    local.refresh()
    index_once(cfg, pg_url, tiny_embedder)
    reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))
    try:
        found, local_misses = 0, set()
        for needle in NEEDLES:
            a, b = _answers(local, needle), _answers(reader, needle)
            assert b["rows"] == _scanned(reader, needle), repr(needle)   # every section that holds it
            if a != b:
                local_misses.add(needle)
            found += bool(b["rows"])
        assert found >= len(NEEDLES) // 2   # the needles do hit things
        # Same answers everywhere but one place: FTS5's case folding leaves İ alone, so the local
        # index misses "İstanbul" where Python's lower() (what the callers test) finds it; the
        # PostgreSQL index gives the candidates the scan does.
        assert local_misses == {"İstanbul", "i\u0307stanbul"}, local_misses
        # the index answered (not the fallback scan) for every needle a trigram can look up
        with reader.view(()) as view:
            assert reader.catalog.sections_containing(["café"]) is not None
            assert reader.catalog.sections_containing(["ab"]) is None          # too short: the engine scans
            assert reader.catalog.sections_containing(["a\x00b"]) is None      # NUL: the engine scans
            assert reader.catalog.uses_word("err_conn") is not None
    finally:
        reader.close()
        local.close()
    # and PostgreSQL uses the GIN indexes for it, on its own even for a store this small (the
    # trigram function's cost: migration 12) — for a reader role too (its row-level security
    # policy lets every row through, so it does not stand between the query and the index)
    role = f"literal_reader_{os.getpid()}"
    from remembrancer.indexer.store.postgres import roles as pg_roles

    pg_roles.grant_reader(pg_url, role, [], password="pw", everything=True)
    try:
        for url in (pg_url, pg_url.replace("postgres:@", f"{role}:pw@")):
            with psycopg.connect(url) as c:
                plan = "\n".join(r[0] for r in c.execute(
                    "EXPLAIN SELECT id FROM sections s WHERE public.remembrancer_grams(s.content) @>"
                    " public.remembrancer_grams(%s) OR public.remembrancer_grams(s.heading) @> public.remembrancer_grams(%s)",
                    ("café", "café")))
                assert "sections_content_grams" in plan and "sections_heading_grams" in plan, plan
    finally:
        with psycopg.connect(pg_url, autocommit=True) as c:
            c.execute(f"DROP OWNED BY {role}")
            c.execute(f"DROP ROLE {role}")


WORD_FILES = {
    # plain: ASCII and common punctuation, one chunk — its whole words are its body postings
    "plain.md": "# Plain\n\nThe BACKUP ran; failover done — twice… 'quoted' “smart” → next. snake_case_word v2beta.\n",
    # not plain: a letter beside the word (é), the Kelvin sign Python folds to k, a section of many chunks
    "accents.md": "# Accents\n\nbacké and a naïve check.\n",
    "kelvin.md": "# Scale\n\nthe \u212aelvin scale\n",
    "long.md": "# Long\n\n" + "filler " * 700 + "quokka " + "filler " * 10 + "\n",
}
WORDS = ["backup", "back", "failover", "fail", "twice", "quoted", "smart", "next", "snake", "case", "beta", "check",
         "naïve", "kelvin", "quokka", "filler", "scale", "missing", "zebra", "ba"]


def test_whole_word_checks_answer_like_a_scan(tmp_path, data_env, tiny_embedder, pg_url):
    """`uses_word` from the postings of plain sections and the tested candidates of the others
    (pg_schema migration 11) gives what a scan of every visible section gives, in and out of a scope."""
    from remembrancer.indexer import terms

    notes = tmp_path / "notes"
    for name, text in WORD_FILES.items():
        write(notes, name, text)
    cfg = Config(roots=make_roots([notes]))
    index_once(cfg, pg_url, tiny_embedder)
    with psycopg.connect(pg_url) as c:
        plain = dict(c.execute("SELECT d.path, bool_and(s.plain) FROM sections s JOIN documents d ON d.id = s.doc_id"
                               " GROUP BY d.path").fetchall())
    assert [p for p, v in sorted(plain.items()) if v] == ["plain.md"], plain
    reader = Engine(cfg, readonly=True, embedder=tiny_embedder, store=PgStore(pg_url, readonly=True))

    def scan(word, view=None):
        return terms.uses_whole(word, (c.lower() for _, _, c, _ in (view or reader.view()).lowered_sections()))

    try:
        seen = {}
        for scope in ((), ("plain.md",), ("accents.md", "kelvin.md", "long.md")):
            with reader.view(scope) as view:
                seen[scope] = {w: S._word_occurs(view, w) for w in WORDS}
                assert seen[scope] == {w: scan(w, view) for w in WORDS}, scope
        got = seen[()]
        assert got["back"] and got["kelvin"] and got["quokka"]   # found only where the postings cannot say
        assert got["backup"] and got["case"] and not got["beta"] and not got["fail"] and not got["missing"]
        assert not seen[("plain.md",)]["back"] and not seen[("accents.md", "kelvin.md", "long.md")]["backup"]
    finally:
        reader.close()


def test_the_plain_marks_punctuation_is_punctuation_to_tantivy_and_pythons_lower():
    """What makes a section plain must keep its whole words and its tokens the same."""
    from remembrancer.indexer.ingest import chunks
    from remembrancer.indexer.store.postgres import keywords as pg_keywords
    from remembrancer.indexer.store.postgres import schema as pg_schema

    assert pg_schema.PLAIN_MAX_CHARS == chunks.MAX_CHUNK_CHARS
    for c in pg_schema.PLAIN_EXTRA:
        assert pg_keywords._DEFAULT.analyze(f"ab{c}cd") == ["ab", "cd"] and c.lower() == c and not c.isalnum(), hex(ord(c))


def test_the_faster_trigram_function_gives_the_first_ones_trigrams(pg_url):
    """Migration 13 replaced migration 8's trigram function in place (its indexes kept): on any
    text — case, ς, U+0307, emoji, newlines, under three characters — the same set of trigrams."""
    import random

    from remembrancer.indexer.store.postgres import schema as pg_schema

    first = pg_schema.first_grams_function("pg_temp.grams_v8")
    rng = random.Random(8)
    alphabet = list("abcXYZ 01\n\t.-_%\\'\"") + ["é", "É", "ß", "Σ", "ς", "İ", "\u0307", "\u212a", "🚀", "ﬁ", "—", "中"]
    texts = ["", "a", "ab", "abc", "abcd", "İstanbul", "ΣΊΣΥΦΟΣ rolls", "emoji 🚀 launch", "a\u0307b\u0307c"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(300)]
    with psycopg.connect(pg_url, autocommit=True) as c:
        from remembrancer.indexer.store.postgres.schema import migrate
        migrate(c)
        c.execute(first)
        for t in texts:
            old, new = c.execute(f"SELECT pg_temp.grams_v8(%s), public.{pg_schema.LITERAL_GRAMS}(%s)", (t, t)).fetchone()
            assert set(old) == set(new), repr(t)
