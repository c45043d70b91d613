"""Words and identifiers, the same way at index time and at query time.

Stemmed full-text fields split `snake_case`, `dotted.names` and `--flags` into plain words and
never split `camelCase`; an identifier question (`--no-track`, `HTTPRequest`, `max_connections`)
is won by matching the identifier whole. So identifiers get a second field holding each one
whole (lower-cased) plus its camelCase/snake_case/dot/dash parts.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

_TOKEN_RE = re.compile(r"-{0,2}[A-Za-z0-9_][A-Za-z0-9_.\-/:@]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
WORD_RE = re.compile(r"\w+", re.UNICODE)
# A whole word for "does the corpus use it?": the same boundaries as a `(?<![a-z0-9])w(?![a-z0-9])` scan.
WORD_RUN_RE = re.compile(r"[a-z0-9]+")
_ALNUM_RE = re.compile(r"[A-Za-z0-9]")
_LOWER_UPPER_RE = re.compile(r"[a-z][A-Z]")
_LETTER_RE = re.compile(r"[A-Za-z]")
_DIGIT_RE = re.compile(r"\d")

# Words too common to say anything about which section answers (used by coverage measures,
# never to drop words from the BM25 query, where IDF already handles them).
STOPWORDS = frozenset("""
a an and are as at be been being but by can could did do does doing done for from had has have
how i if in into is it its me my no not of on or our should so that the their them then there these
they this those to up us was we were what when where which who why will with would you your
about after again all also am any because before between both each few get got just more most
much only other out over own same some such than too under until very via vs let s t don want
know tell find show see use used using make made way need ok okay
""".split())


# A log's severity, written in capitals by the line a user pastes ("… ERROR push-gateway apns: 403"):
# the line's level, never what the question is about, so no name the notes should hold.
LOG_LEVELS = frozenset("trace debug info notice warn warning error err fatal critical crit alert emerg severe panic".split())


def is_log_level(word: str) -> bool:
    """`ERROR`, `WARN`: a log line's level in capitals (not "Error Budget", a name)."""
    return word.isupper() and word.lower() in LOG_LEVELS


# Scripts written without spaces between words — Chinese, Japanese (kana and kanji), and Korean's
# syllables — make one token of a whole run for tantivy's tokenizer, so a word inside a run never
# matched ("备份" inside "数据库备份策略"). The keyword leg indexes and asks such runs as
# overlapping character bigrams (as CJK search engines without a dictionary do); text without
# them is returned unchanged (English indexes exactly as before). The literal index still finds any
# substring.
_CJK = ("\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
        "\U00020000-\U0002ffff")
_CJK_RUN_RE = re.compile(f"[{_CJK}]+")


def has_cjk(text: str) -> bool:
    return _CJK_RUN_RE.search(text) is not None


def cjk_bigrams(run: str) -> list[str]:
    """A run of such characters as its overlapping bigrams (one character stays itself)."""
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def keyword_text(text: str) -> str:
    """The text as the keyword leg indexes and asks it: each CJK run as its bigrams, set apart by
    spaces from what surrounds it ("Redis备份" → "Redis 备份 "); anything else as it is."""
    if not has_cjk(text):
        return text
    return _CJK_RUN_RE.sub(lambda m: " " + " ".join(cjk_bigrams(m.group(0))) + " ", text)


def is_identifier(token: str) -> bool:
    """Identifier-shaped: a flag (`--x`), inner `_ . : @` (`max_conn`, `events.raw`), a path
    (`/etc/x`, `a/b/c`), camelCase, CONSTANT_CASE, or letters with digits (`pg1`, `HTTP-2`).
    English stays English: `cut-over`, `mid-April` and `cache/queue` are not identifiers."""
    if token.isascii() and token.isalpha():   # most words (an index run asks for every token): the same
        return token.isupper() and len(token) > 3 or _LOWER_UPPER_RE.search(token) is not None   # answer, sooner
    core = token.strip("-")
    if not core or not _ALNUM_RE.search(core):
        return False
    if token.startswith("-") and re.match(r"^--?[A-Za-z]", token):
        return True
    if any(c in core for c in "_.:@"):
        return True
    if "/" in core:
        return core.startswith(("/", "~", ".")) or core.count("/") >= 2
    if _LOWER_UPPER_RE.search(core):
        return True
    letters, digits = _LETTER_RE.search(core), _DIGIT_RE.search(core)
    if letters and digits:
        return True
    return core.isupper() and len(core) > 3 and "-" not in core


def identifier_terms(text: str) -> list[str]:
    """Each identifier-shaped token whole, lower-cased, plus its parts (for the `ident` field)."""
    out: list[str] = []
    for m in _TOKEN_RE.finditer(text):
        tok = m.group(0)
        if not is_identifier(tok):
            continue
        out.append(tok.lower())
        parts = [p.lower() for p in _CAMEL_RE.findall(tok)]
        if len(parts) > 1:
            out.extend(parts)
    return out


_CALL_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(")
_QUOTED_RE = re.compile(r"`([^`]{2,80})`|\"([^\"]{2,80})\"")


def _before_a_cut(text: str) -> str:
    """`text` without a closing ellipsis ("…" or three dots or more) and the space before it."""
    if text.endswith("…"):
        return text[:-1].rstrip()
    return text.rstrip(".").rstrip() if text.endswith("...") else text


ORDINAL_RE = re.compile(r"^\d{1,4}(?:st|nd|rd|th)$", re.IGNORECASE)   # "3rd", "16th"
# A number hyphened to the words it counts, as English writes an adjective: "a 3-node cluster", "the
# 16-GPUs-per-group rule" (the notes may say "16 GPUs per group", "the 16-GPU cap"); `node-3` is a name.
NUMBER_COMPOUND_RE = re.compile(r"^\d{1,6}(?:-[A-Za-z]+)+$")
# A product's name in mixed case ("JavaScript", "GitHub", "PostgreSQL"; "JavaScript-only"): a name, not
# a string to find verbatim — the notes may call it otherwise ("JS-only").
BRAND_RE = re.compile(r"^[A-Z][A-Za-z]*[a-z][A-Za-z]*(?:-[a-z]+)*$")


def literal_probes(query: str) -> list[str]:
    """Strings worth finding verbatim: quoted spans, call names (`rate(` from `rate(x[5m])`),
    and identifier-shaped tokens."""
    probes: list[str] = []
    for m in _QUOTED_RE.finditer(query):
        # An ellipsis marks where the asker cut a pasted string ("stmtcache_..." for the notes'
        # "stmtcache_9f1c…"): what comes before it is what to find.
        probes.append(_before_a_cut((m.group(1) or m.group(2)).strip()))
    for m in _CALL_RE.finditer(query):
        probes.append(m.group(1) + "(")
    for raw in query.split():
        tok = raw.strip(".,;:!?()[]{}\"'`…")
        if "(" in tok:
            continue  # call syntax: its name is probed above
        tok = re.sub(r"'s$", "", tok)
        if is_identifier(tok) and len(tok) >= 2:
            probes.append(tok)
    return list(dict.fromkeys(p for p in probes if p))


# Where a sentence begins: a capital there is grammar, not a name ("… then gives up. Colleagues in my lab …").
_SENTENCE_START_RE = re.compile(r"(?:^\s*|[.!?]\s+|\n\s*)(?:[-*+]\s+)?[\"'(]*$")


def name_words(query: str) -> list[str]:
    """Words used as names: Capitalised where no sentence begins, or ALL-CAPS (`Okta`, `SLA`; not a
    log line's `ERROR`)."""
    out = []
    for m in re.finditer(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]+(?![A-Za-z0-9_])", query):
        w = m.group(0)
        if w.lower() in STOPWORDS or is_log_level(w):
            continue
        # (a few characters back: `^` is the text's start, not the window's; `$` is the word's)
        starts = _SENTENCE_START_RE.search(query, max(0, m.start() - 8), m.start()) is not None
        if (w[0].isupper() and not starts) or (w.isupper() and len(w) >= 2):
            out.append(w)
    return out


def words(text: str) -> list[str]:
    """Lower-cased plain words, safe to hand to a query parser (no operators, no syntax)."""
    return [w.lower() for w in WORD_RE.findall(text)]


def uses_whole(word: str, lowered_texts: Iterable[str]) -> bool:
    """Whether any of the lower-cased texts holds `word` (lower-case) whole: not inside a longer
    run of ASCII letters and digits. Stops at the first that does."""
    rx = re.compile(r"(?<![a-z0-9])" + re.escape(word) + r"(?![a-z0-9])")
    return any(rx.search(t) for t in lowered_texts)


def elide(text: str, width: int = 80) -> str:
    """The text as a message may quote it: an agent's 20 kB query must not come back 20 kB long,
    nor half a secret (indexer/errors.py `echo`: redacted whole, then cut between tokens)."""
    from remembrancer.indexer.errors import echo

    return echo(text, width)


# Every control character, newline and tab included: a file name may hold any of them, and one
# printed as it is would break an answer's lines (or forge one). Text bodies keep their newlines.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    r"""`text` (a path, a warning naming one) with its control characters shown as `\x0a`: what
    must stay on its own line in human output (JSON escapes them already)."""
    return _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def shown(words: Iterable[str], most: int = 8, width: int = 40) -> str:
    """Words listed in a message: each elided, at most `most` of them and a count of the rest."""
    words = list(words)
    listed = ", ".join(elide(w, width) for w in words[:most])
    return listed + (f" and {len(words) - most} more" if len(words) > most else "")


def content_words(text: str) -> list[str]:
    """The words that carry a question's meaning: not stop words, not single characters."""
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]


# Base forms tried before calling a word rare: an inflection of a common word ("fetched",
# "compaction", "reprocess") is common too.
_SUFFIXES = (("ations", "e"), ("ation", "e"), ("ation", ""), ("ings", ""), ("ing", ""), ("ing", "e"), ("ed", ""),
             ("ed", "e"), ("ies", "y"), ("es", ""), ("s", ""), ("ally", ""), ("ly", ""), ("ness", ""), ("ers", ""),
             ("er", ""), ("er", "e"), ("ions", ""), ("ion", ""), ("ion", "e"), ("ity", ""), ("ment", ""),
             ("able", ""), ("ive", ""))
_PREFIXES = ("re", "un", "pre", "de", "non", "over", "under", "mis")


def _stems(w: str, shortest: int) -> list[tuple[str, str]]:
    """(stem, the form it was inflected from) for each suffix `w` may carry, the stem `shortest`
    letters or more."""
    return [(w[: -len(suffix)], w[: -len(suffix)] + repl) for suffix, repl in _SUFFIXES
            if w.endswith(suffix) and len(w) - len(suffix) >= shortest]


def base_forms(word: str) -> set[str]:
    """The word and the forms it may be inflected from (suffixes, a doubled consonant, a prefix)."""
    w = word.lower()
    out = {w}
    for stem, form in _stems(w, 3):
        out.add(form)
        if len(stem) >= 4 and stem[-1] == stem[-2]:
            out.add(stem[:-1])
    for prefix in _PREFIXES:
        out |= {f[len(prefix):] for f in list(out) if f.startswith(prefix) and len(f) - len(prefix) >= 4}
    return out


def inflected_from(word: str) -> set[str]:
    """The plain words `word` may be an inflection of by its suffix alone ("pruning" → "prune",
    "prun"), stems of four letters or more: no prefix is taken off ("undo" is not "do")."""
    w = word.lower()
    return {form for _, form in _stems(w, 4)} - {w} if w.isalpha() else set()


def is_rare(word: str, common: frozenset[str] | None) -> bool:
    """A term of art rather than everyday English: neither it nor a base form is a whole word of
    `common` (the embedding model's vocabulary — general text, not this corpus). Its absence from
    a corpus means the same in 11 notes as in 10,000, unlike an everyday word's ("towards",
    "serve"), which a small corpus lacks by chance. Without a vocabulary every word counts. An
    ordinal ("16th") is everyday English whatever the vocabulary holds."""
    if ORDINAL_RE.match(word):
        return False
    return common is None or not (base_forms(word) & common)


# -- names spelled two ways -------------------------------------------------------------------------
# A file name may reach the index decomposed (NFD: macOS, some sync tools write `é` as `e` + U+0301)
# while a user or an agent types it composed (NFC), or the reverse: the same name to anyone reading
# it. The index keeps each path as the file system has it; a lookup compares the NFC forms.


def nfc(text: str) -> str:
    """`text` in Unicode NFC: the form two spellings of one name are compared in."""
    return unicodedata.normalize("NFC", text)


def indexed_spelling(path: str, paths: Iterable[str]) -> str | None:
    """The one indexed path that is `path` spelled in another Unicode form, else None (an ASCII
    name has one spelling; two indexed spellings of it are two files, and neither is guessed)."""
    if path.isascii():
        return None
    want = nfc(path)
    hits = [p for p in paths if not p.isascii() and p != path and nfc(p) == want]
    return hits[0] if len(hits) == 1 else None


def indexed_prefix(prefix: str, paths: Iterable[str]) -> str | None:
    """A path prefix as the index spells it when it is typed in another Unicode form (`journal/café`
    for NFD files), else None: the prefix as typed matches, or nothing does. The spelling most
    documents under it share wins when folders differ."""
    if prefix.isascii():
        return None
    paths = list(paths)
    bare = prefix.rstrip("/")
    if any(p == bare or p.startswith(prefix) for p in paths):
        return None
    want = nfc(prefix)
    found: dict[str, int] = {}
    for p in paths:
        if not nfc(p).startswith(want):
            continue
        head = next((p[:k] for k in range(len(p) + 1) if nfc(p[:k]) == want), None)   # the head of p spelling it
        if head is not None:
            found[head] = found.get(head, 0) + 1
    return max(sorted(found), key=found.get) if found else None
