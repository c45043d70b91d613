"""The kind of value a question asks for, when that kind has a shape text shows: an amount of
money, a phone number, an IP address, a port. A question asking for one ("What's Tillpoint's after-hours
support phone number?") that none of the sections an answer would show holds a value of has no
answer there, however well its other words match: the notes describe the thing, not that detail.

Other kinds are left out: a date, a name, a version or a count is written in nearly every section,
so its absence from the best ones would say little, and "how many?" is answered in words as often.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerType:
    name: str             # as a reason says it: "an amount of money"
    asks: re.Pattern      # the question asks for one
    value: re.Pattern     # a value of the kind, written in a section's text
    accept: Callable[[str], bool] = lambda found: True   # what no pattern says of a match
    unless: re.Pattern | None = None   # the question asks for another thing in the same words


_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _dialable(found: str) -> bool:
    """7 to 15 digits, and no day among them (a day, or a range of days, is no phone number)."""
    return 7 <= sum(ch.isdigit() for ch in found) <= 15 and not _DAY_RE.search(found)


_CURRENCY = r"(?:usd|eur|gbp|chf|cad|aud|sek|nok|dkk|jpy|dollars?|euros?|pounds?|bucks)"
MONEY = AnswerType(
    "an amount of money",
    asks=re.compile(
        r"\bhow much (?:do|does|did|will|would|should|is|are|was|were)\b[^?.\n]{0,60}?\b(?:pay|paid|cost|costs|"
        r"charge|charged|charges|invoice|invoiced|spend|spent|bill|billed)\b|"
        r"\b(?:price|prices|cost|costs|quote|fee|fees|invoice|budget)\b[^?.\n]{0,60}?\bcome to\b|"
        r"\bwhat(?:'s| is| are| was| were| did)? (?:the |our |their |its )?(?:[\w-]+ ){0,4}(?:price|prices|cost|fee|fees|"
        r"quote|budget)\b|\bin (?:" + _CURRENCY + r"|(?:absolute )?money)\b",
        re.IGNORECASE),
    # A currency sign or name beside a figure, a price's two decimals (`3.99`; not a fraction, `0.05`:
    # a sample rate or a ratio far more often than a price without its currency), or a figure a
    # period ("29/year", "400 per month").
    value=re.compile(r"[$€£¥]\s?\d|\d[\d.,]{0,15}\s?(?:[kKmM]\b)?\s?(?:[$€£¥]|\b" + _CURRENCY + r"\b)|"
                     r"\b" + _CURRENCY + r"\s?\d|(?<![\d.])(?!0\.)\d{1,7}\.\d{2}(?![\d.])|"
                     r"\d[\d.,]{0,15}\s?(?:/|per |an? )(?:month|mo|year|yr|seat|user)\b", re.IGNORECASE),
    # A budget of something measured ("the bundle size budget", "our latency budget", "the error
    # budget") is a limit in its own units, not money.
    unless=re.compile(r"\b(?:size|latency|error|performance|perf|time|timing|memory|ram|cpu|token|context|bundle|"
                      r"render|frame|page|request|retry|storage|disk|battery|power|bandwidth|complexity)s?\s+budgets?\b",
                      re.IGNORECASE))
PHONE = AnswerType(
    "a phone number",
    asks=re.compile(r"\b(?:phone|telephone) (?:number|line)s?\b|\bhotline\b", re.IGNORECASE),
    # digits grouped by spaces, dots, dashes or brackets; _dialable counts them
    value=re.compile(r"(?<![\w.])\+?\(?\d[\d ().-]{5,20}\d(?![\w])"), accept=_dialable)
IP_ADDRESS = AnswerType(
    "an IP address",
    # "What's the IP of…", "which IP address…", "the IP address of…" — not "per IP address" or a host
    # named `ip-10-42-7-19`: the address asked for, in capitals as people write it.
    asks=re.compile(r"\b(?i:what(?:'s| is| are)|which)\b[^?.\n]{0,30}?\bIP(?:v[46])?(?: (?i:address(?:es)?))?\b(?!-)|"
                    r"\bIP(?:v[46])?(?: (?i:address(?:es)?))? (?i:of|for)\b"),
    value=re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])|\b(?:[0-9a-f]{1,4}:){4,7}[0-9a-f]{1,4}\b",
                     re.IGNORECASE))
PORT = AnswerType(
    "a port number",
    # "Which port does Sieve listen on?", "what port is the S3 API on" — not "on port 55432" (the
    # question names one) or "port the app to Go".
    asks=re.compile(r"\b(?:what|which)(?:'s| is| are)?(?: the)? (?:tcp |udp |\w+ )?ports?\b(?! (?:the|it|to)\b)",
                    re.IGNORECASE),
    # host:port, "port 5432", "5432/tcp", "listens on 2222", a container's `-p 8080:80`
    # (every repeat bounded: a long run of `a-a-a…` must stay linear)
    value=re.compile(r"(?<![\w:]):\d{2,5}\b|\b[A-Za-z][\w.-]{0,63}:\d{2,5}\b|"
                     r"\bports?\b\W{0,3}(?:\w{1,40}\W{1,3}){0,3}?\d{2,5}\b|\b\d{2,5}/(?:tcp|udp)\b|"
                     r"\blisten\w{0,5}\W{1,3}(?:on\W{1,3})?(?:[\w.-]{1,63}:)?\d{2,5}\b|-p\s{1,8}\d{2,5}:\d{2,5}\b",
                     re.IGNORECASE))
TYPES = (MONEY, PHONE, IP_ADDRESS, PORT)


def asked(query: str) -> AnswerType | None:
    """The kind of value the question asks for, or None."""
    return next((t for t in TYPES if t.asks.search(query) and not (t.unless and t.unless.search(query))), None)


def holds(kind: AnswerType, text: str) -> bool:
    """Whether `text` writes a value of the kind."""
    return any(kind.accept(m.group(0)) for m in kind.value.finditer(text))
