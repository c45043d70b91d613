"""Source code as a corpus of its own: functions, classes and methods as sections (tree-sitter's
grammars from the `code` extra), breadcrumbs, identifiers split into words for the keyword leg,
read and outline cut as search cuts, gitignore respected, secrets redacted — with the real engine
(tantivy, hnswlib, the tiny ONNX model) on files written to disk and a real git repository."""

from __future__ import annotations

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.answers import Freshness, SearchAnswer
from remembrancer.indexer.config import CODE, Config, make_roots
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.ingest import code
from tests.support.corpus import git, git_init, write, write_tree

FRESH = lambda view: Freshness(verdict="fresh")  # noqa: E731

PY = '''"""Rate limiting for the gateway."""
import time

WINDOW = 60


class TokenBucket:
    """Allows bursts up to capacity."""

    def __init__(self, rate, capacity):
        self.rate = rate
        self.capacity = capacity

    @property
    def full(self):
        return self.tokens >= self.capacity

    def take(self, n=1):
        """Take n tokens or refuse."""
        return refillTokens(self, n)


def refillTokens(bucket, n):
    bucket.tokens = min(bucket.capacity, bucket.tokens + bucket.rate)
    return bucket.tokens >= n
'''
TS = '''import { TokenBucket } from "./limiter";

export class Gateway {
  constructor(private limit: number) {}

  handleRequest(req: Request): Response {
    return new Response("ok");
  }
}

export const parseRetryAfter = (header: string): number => {
  return parseInt(header, 10);
};
'''
GO = '''package quota

type Store struct {
	path string
}

func (s *Store) LoadQuota(key string) (int, error) {
	return 0, nil
}

func NewStore(path string) *Store {
	return &Store{path: path}
}
'''


@pytest.fixture
def src(tmp_path):
    root = tmp_path / "app"
    git_init(root)
    write_tree(root, {"limiter.py": PY, "web/server.ts": TS, "quota/store.go": GO,
                      "schema.sql": "".join(f"-- line {i}\nSELECT {i};\n" for i in range(70)),
                      "node_modules/dep/index.js": "function vendored() {}\n",
                      "build/gen.py": "def generated():\n    pass\n", ".gitignore": "build/\n"})
    return root


def code_engine(engine_of, root):
    cfg = Config(code=make_roots([root], kind=CODE)).code_config()
    assert cfg is not None and cfg.kind == CODE
    return engine_of(cfg)


def headings(engine, path: str) -> list[str]:
    return [s.heading for s in engine.catalog.sections(path)]


def test_definitions_are_sections_with_breadcrumbs(src, engine_of):
    e = code_engine(engine_of, src)
    report = e.refresh()
    assert set(e.catalog.documents()) == {"limiter.py", "web/server.ts", "quota/store.go", "schema.sql"}   # ignored: gitignore, node_modules
    assert report.added == 4
    assert headings(e, "limiter.py") == ["", "TokenBucket", "TokenBucket > __init__", "TokenBucket > full",
                                         "TokenBucket > take", "refillTokens"]
    full = next(s for s in e.catalog.sections("limiter.py") if s.heading == "TokenBucket > full")
    assert full.content.lstrip().startswith("@property")   # the decorator is its definition's
    assert headings(e, "web/server.ts") == ["", "Gateway", "Gateway > constructor", "Gateway > handleRequest",
                                            "parseRetryAfter"]
    assert headings(e, "quota/store.go") == ["", "Store", "LoadQuota", "NewStore"]
    assert headings(e, "schema.sql") == ["", "lines 61-120", "lines 121-140"]   # no grammar: windows of 60 lines
    take = next(s for s in e.catalog.sections("limiter.py") if s.heading == "TokenBucket > take")
    assert (take.start_line, take.end_line) == (18, 20)


def test_read_and_outline_name_the_sections_search_names(src, engine_of):
    e = code_engine(engine_of, src)
    e.refresh()
    with e.view() as view:
        from remembrancer.indexer.search.reader import outline, read

        page = read(view, "limiter.py", heading="take")
        assert page.content.strip().startswith("def take(self, n=1):") and "refillTokens(self, n)" in page.content
        out = outline(view, "web/server.ts")
    assert [s.heading for s in out.sections] == headings(e, "web/server.ts")


def test_identifiers_are_found_by_their_words_and_a_definition_by_its_name(src, engine_of):
    e = code_engine(engine_of, src)
    e.refresh()
    out = SearchAnswer.parse(api.dispatch_read(e, "search", {"query": "refill tokens", "explain": True, "limit": 10},
                                               FRESH))
    hit = next(r for r in out.results if r.heading == "refillTokens")
    assert hit.scores.bm25 > 0   # `refillTokens` read as refill tokens by the keyword leg
    exact = SearchAnswer.parse(api.dispatch_read(e, "search", {"query": "LoadQuota", "exact": True}, FRESH))
    assert exact.results[0].heading == "LoadQuota" and exact.results[0].path == "quota/store.go"
    # the call site in TokenBucket > take holds the name too: the definition comes first
    for q, params in (("refillTokens", {"exact": True}), ("what does refillTokens do", {}),
                      ("TokenBucket.take", {})):
        out = api.dispatch_read(e, "search", {"query": q, **params}, FRESH)
        first = (out.get("results") or out["best_weak"])[0]
        assert first["heading"] == {"TokenBucket.take": "TokenBucket > take"}.get(q, "refillTokens"), (q, first)
    assert code.split_identifier("parseHTTPRetryAfter2") == ["parse", "http", "retry", "after", "2"]
    assert code.identifier_words("x = refill_tokens(parseRetryAfter)") == "refill tokens parse retry after"


def test_edits_secrets_and_bad_files(src, engine_of):
    e = code_engine(engine_of, src)
    e.refresh()
    write(src, "limiter.py", PY + "\nAPI_KEY = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\"\n\n"
                                  "def drainBucket(bucket):\n    bucket.tokens = 0\n")
    (src / "blob.py").write_bytes(b"\x00\x01binary")
    report = e.writer.refresh_paths([str(src / "limiter.py"), str(src / "blob.py")])
    assert report.updated == 1 and "drainBucket" in headings(e, "limiter.py")
    assert "blob.py: skipped, looks binary (NUL bytes)" in report.warnings
    text = " ".join(s.content for s in e.catalog.sections("limiter.py"))
    assert "ghp_abcdef" not in text and "[REDACTED" in text


def test_without_the_extra_every_file_is_read_in_windows(src, engine_of, monkeypatch):
    """The `code` extra is installed for the tests; its absence is simulated (the one stand-in here)."""
    monkeypatch.setattr(code, "_parser", lambda language: None)
    assert not code.syntax_aware()
    e = code_engine(engine_of, src)
    e.refresh()
    assert headings(e, "limiter.py") == [""]   # 26 lines: one window


def reader(engine):
    return lambda m, p: api.dispatch_read(engine, m, p, FRESH)


@pytest.fixture
def notes_and_code(src, tmp_path, engine_of):
    """(notes engine, code engine), both indexed: a note about the gateway beside the source."""
    notes = write_tree(tmp_path / "notes", {"gateway.md": "# Gateway\n\nThe gateway refills token buckets every "
                                                          "second.\n", "runbooks/a.md": "# A\n\nRefill the bucket.\n"})
    n = engine_of(Config(roots=make_roots([notes])))
    n.refresh()
    c = code_engine(engine_of, src)
    c.refresh()
    return n, c


def test_code_is_searched_only_when_asked(src, notes_and_code):
    n, c = notes_and_code
    before = git(src, "status", "--porcelain", "--ignored")
    for corpus in (None, "all"):
        out = api.read_across("search", {"query": "refill token bucket", **({"corpus": corpus} if corpus else {})},
                              reader(n), None, None, reader(c))
        assert all(r["path"] in ("gateway.md", "runbooks/a.md") for r in out["results"])
    out = api.read_across("search", {"query": "refill token bucket", "corpus": "code"}, reader(n), None, None,
                          reader(c))
    assert {r["type"] for r in out["results"]} == {"code"}
    page = api.read_across("read", {"path": "quota/store.go", "heading": "NewStore"}, reader(n), None, None,
                           reader(c))   # a source file's path: the code index holds it
    assert "func NewStore" in page["content"]
    with pytest.raises(UserError) as err:
        api.read_across("search", {"query": "x", "corpus": "code"}, reader(n), None, None, None)
    assert err.value.param == "corpus" and "--code" in err.value.hint
    assert git(src, "status", "--porcelain", "--ignored") == before   # indexing and reading wrote nothing there


def test_a_scoped_session_never_reads_code(notes_and_code):
    n, c = notes_and_code
    with pytest.raises(UserError) as err:
        api.read_across("search", {"query": "refill", "corpus": "code", "scope": ["runbooks/"]},
                        reader(n), None, None, reader(c))
    assert err.value.code == "out_of_scope" and "source folders" in err.value.message


def test_the_code_table_of_the_config_file(tmp_path, monkeypatch, src):
    from remembrancer.indexer.config import load_config

    cfg_file = tmp_path / "config.toml"
    monkeypatch.setenv("REMEMBRANCER_CONFIG", str(cfg_file))
    cfg_file.write_text(f'[code]\nroots = ["{src}"]\n')
    assert [r.path for r in load_config([]).code] == [src.resolve()]
    assert load_config([], code_args=[str(src / "web")]).code[0].path == (src / "web").resolve()   # --code wins
    for bad, says in (('[code]\nroots = "src"\n', "[code] roots must be a list"),
                      ('[code]\nroot = ["src"]\n', "unknown"), ('[code]\nroots = ["/nowhere/at/all"]\n', "not found")):
        cfg_file.write_text(bad)
        with pytest.raises(UserError) as err:
            load_config([])
        assert says in err.value.message, err.value.message


def test_every_ending_the_chunker_reads_is_one_a_code_corpus_takes():
    """config.CODE_SUFFIXES (what the walk takes) and code.LANGUAGES (what tree-sitter reads) are two
    lists (config cannot import the chunker): a language added to one only would be never walked,
    or walked and cut into windows without its grammar."""
    from remembrancer.indexer.config import CODE_SUFFIXES

    assert set(code.LANGUAGES) <= set(CODE_SUFFIXES)
    assert not {s for s in CODE_SUFFIXES if s not in code.LANGUAGES} - {".sql", ".toml", ".yaml", ".yml"}
