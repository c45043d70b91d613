"""Calendar days as notes and questions write them: `2024-01-05`, "5 January 2024", "the 3rd of
June", "on 14 May" (no year: which one is the notes' to say), "yesterday", "last Tuesday" (counted
from today). A question's day is the day to look in (search.answer); a month's name is what a
journal's heading is read by (ingest.meta)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Iterable, Iterator, NamedTuple


# A calendar day as questions name it: `2024-01-05`, "5 January 2024", "January 5th, 2024", "the 3rd
# of June 2024" — or without its year ("on 14 May", "June 3rd"), then only with its month capitalised:
# lower-case "may" is a verb more often than a month.
_DAY_ISO_RE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")
_MONTH = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[A-Za-z]{0,6}(?![A-Za-z])"
_ORDINAL = r"(?:st|nd|rd|th)?"
_DAY_WORDS_RE = re.compile(rf"(?<![\w-])(?:(?P<d1>\d{{1,2}}){_ORDINAL}\s(?:of\s)?(?P<m1>{_MONTH})\.?"
                           rf"|(?P<m2>{_MONTH})\.?\s(?P<d2>\d{{1,2}}){_ORDINAL}(?!\d))"
                           r"(?:,?\s(?P<year>\d{4}))?(?![\w:.]?\d)")


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# A day named by where it stands from today: "yesterday", "the day before yesterday", "last Tuesday".
# ("Today" is not: "how many nodes does it have today?" asks what holds now, not what today's notes say.)
_RELATIVE_RE = re.compile(r"\b(?:(?:the )?day before yesterday|yesterday|last (" + "|".join(_WEEKDAYS) + r"))\b",
                          re.IGNORECASE)


def today() -> dt.date:
    """The day a relative day counts from: this machine's, in its time zone."""
    return dt.date.today()


def _relative_day(m: re.Match) -> dt.date:
    now = today()
    if m.group(1):   # the last such weekday before today (a week ago on that weekday itself)
        return now - dt.timedelta(days=(now.weekday() - _WEEKDAYS.index(m.group(1).lower())) % 7 or 7)
    return now - dt.timedelta(days=2 if "before" in m.group(0).lower() else 1)


def month_of(word: str) -> int | None:
    """The month a word names, 1–12: its name or a cut of it three letters or more ("Sep", "Sept")."""
    w = word.lower()
    return next((i for i, name in enumerate(_MONTH_NAMES, 1) if len(w) >= 3 and name.startswith(w)), None)


# A heading that is a day written in words, as hand-kept logs title their entries: "Tuesday 6 May",
# "14 May 2031", "May 14th, 2031 — pg1 disk", "Thu, 22 May", "Monday 3rd" (its month from above).
# Only at the start of the heading: "11:00 — GA slips to 13 December" names a day, it is not one.
_WEEKDAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|sday|nesday|rsday|urday)?\.?,?"
HEADING_DAY_RE = re.compile(
    rf"^\W{{0,4}}(?:(?P<weekday>{_WEEKDAY})\s+)?"
    rf"(?:(?P<d1>\d{{1,2}}){_ORDINAL}(?:\s+of)?\s+(?P<m1>{_MONTH})\.?"
    rf"|(?P<m2>{_MONTH})\.?\s+(?P<d2>\d{{1,2}}){_ORDINAL}(?!\d)"
    rf"|(?P<d3>\d{{1,2}}){_ORDINAL}(?![\dA-Za-z])(?!\s+[A-Za-z]))"
    r"(?:,?\s+(?P<year>\d{4}))?(?![\w:/.-]*\d)", re.IGNORECASE)


def heading_day(title: str, whole: bool = False) -> tuple[int | None, int | None, int] | None:
    """(year or None, month or None, day) of a heading that begins with a day in words (`whole`: is
    that day and nothing else), else None: a bare number ("3 things to check") is no day, "Monday
    3rd" is (its month said elsewhere), and a word that is no month ("3 Jobs", "Step 2") makes none."""
    m = HEADING_DAY_RE.match(title)
    if m is None or (m["d3"] is not None and not m["weekday"]) or (whole and m.end() != len(title.rstrip())):
        return None
    month = month_of(m["m1"] or m["m2"]) if m["d3"] is None else None
    if month is None and m["d3"] is None:
        return None
    return (int(m["year"]) if m["year"] else None), month, int(m["d1"] or m["d2"] or m["d3"])


# A day written in figures at a heading's start, its year in full: `2035/05/14`, `2035.05.14`,
# `14.05.2035` (day first, as most of Europe writes it), and `14/05/2035` or `05/14/2035` — in the
# order a part over 12 says, else the one the document's other headings say (slash_order), else none.
_NUMERIC_DAY_RE = re.compile(
    rf"^\W{{0,4}}(?:{_WEEKDAY}\s+)?(?:(?P<y1>\d{{4}})(?P<s1>[./])(?P<m1>\d{{1,2}})(?P=s1)(?P<d1>\d{{1,2}})"
    r"|(?P<a>\d{1,2})(?P<s2>[./])(?P<b>\d{1,2})(?P=s2)(?P<y2>\d{4}))(?![\w:/.-]*\d)", re.IGNORECASE)


def numeric_day(title: str, day_first: bool | None = None, whole: bool = False) -> str | None:
    """`YYYY-MM-DD` of a heading that begins with a day in figures (`whole`: is that day and nothing
    else), else None; `day_first` says how to read `03/04/2035` (None: it cannot be told)."""
    m = _NUMERIC_DAY_RE.match(title)
    if m is None or (whole and m.end() != len(title.rstrip())):
        return None
    if m["y1"]:
        return iso_day(int(m["y1"]), int(m["m1"]), int(m["d1"]))
    a, b, year = int(m["a"]), int(m["b"]), int(m["y2"])
    first = True if m["s2"] == "." or a > 12 else False if b > 12 else day_first
    return None if first is None else iso_day(year, b, a) if first else iso_day(year, a, b)


def slash_order(titles: Iterable[str]) -> bool | None:
    """Whether a document's headings write a slashed day day first (`14/05/2035`: True) or month
    first (`05/14/2035`: False), as told by a part over 12; None when none tells or both are seen."""
    seen = set()
    for title in titles:
        m = _NUMERIC_DAY_RE.match(title)
        if m and m["s2"] == "/" and (int(m["a"]) > 12) != (int(m["b"]) > 12):
            seen.add(int(m["a"]) > 12)
    return seen.pop() if len(seen) == 1 else None


def day_in_words(text: str) -> str | None:
    """`YYYY-MM-DD` of a text that is a whole day and nothing else, its year included ("14 May 2031",
    "Tuesday, May 14th, 2031", `14.05.2031`: a daily note named the way its app titles it)."""
    found = heading_day(text, whole=True)
    return iso_day(*found) if found and found[0] and found[1] else numeric_day(text, whole=True)


def without_days(text: str, days: Iterable[str]) -> str:
    """The text with the spans naming any of `days` taken out (their month word is no name); a
    span without its year names each of them that falls on its month and day."""
    keep = set(days)
    month_days = {d[5:] for d in keep}

    def named(m: re.Match) -> bool:
        word = _word_day(m)
        return word is not None and (f"{word[1]:02d}-{word[2]:02d}" in month_days if word[0] is None
                                     else iso_day(*word) in keep)

    text = _RELATIVE_RE.sub(lambda m: "" if _relative_day(m).isoformat() in keep else m.group(0), text)
    return _DAY_WORDS_RE.sub(lambda m: "" if named(m) else m.group(0),
                             _DAY_ISO_RE.sub(lambda m: "" if m.group(0) in keep else m.group(0), text))


_BOUND_BEFORE_RE = re.compile(r"\b(since|after|before|until|till|by|through)\s+(the\s+)?$", re.IGNORECASE)
# "API version 2025-06-01": an API that names its versions by the day each was cut (Stripe's and others')
# names a version, not a day the question is about.
_VERSION_BEFORE_RE = re.compile(r"\bversions?\s+$", re.IGNORECASE)


def _word_day(m: re.Match) -> tuple[int | None, int, int] | None:
    """(year or None, month, day) of a `_DAY_WORDS_RE` match that names a day, else None."""
    word, day = (m["m1"], m["d1"]) if m["d1"] else (m["m2"], m["d2"])
    month = month_of(word)
    if month is None or (m["year"] is None and not word[0].isupper()):
        return None
    return (int(m["year"]) if m["year"] else None), month, int(day)


def iso_day(y: int, mo: int, d: int) -> str | None:
    """`YYYY-MM-DD`, or None for a day no calendar has (31 June, 29 February 2031)."""
    try:
        return dt.date(y, mo, d).isoformat()
    except ValueError:
        return None


class NamedDay(NamedTuple):
    """A day a question places itself on: its words as written, the day (no year: None), and
    whether a time of day follows it (`2031-06-04T10:00:12Z`: a log line's timestamp)."""
    words: str
    year: int | None
    month: int
    day: int
    stamped: bool = False


_TIME_AFTER_RE = re.compile(r"[T ,]{0,2}\d{1,2}:\d{2}")
# A moment written as logs write it: `2031-06-04T10:00:12.123Z`, `2031-06-04`, `10:00`, `10:00:12,345`.
TIMESTAMP_RE = re.compile(r"^(?:\d{4}-\d{2}-\d{2}(?:[T_]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?"
                          r"|T?\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)(?:Z|[+-]\d{2}:?\d{2})?$")


def _written_days(text: str) -> Iterator[tuple[re.Match, tuple[int | None, int, int]]]:
    """Each day the text writes, in figures (`2024-01-05`) and then in words ("5 January"): its match
    and (year or None, month, day)."""
    for m in _DAY_ISO_RE.finditer(text):
        yield m, (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    for m in _DAY_WORDS_RE.finditer(text):
        if (day := _word_day(m)) is not None:
            yield m, day


def named_days(text: str) -> list[NamedDay]:
    """Every day the text places itself on — not a day it measures from or to ("since 2024-01-05",
    "before 5 January 2024"), nor a version named by its day ("API version 2025-06-01") — that a
    calendar has (in some year, when written without one)."""
    def on(m: re.Match) -> bool:
        before = text[max(0, m.start() - 16):m.start()]
        return _BOUND_BEFORE_RE.search(before) is None and _VERSION_BEFORE_RE.search(before) is None

    def stamped(m: re.Match) -> bool:
        return _TIME_AFTER_RE.match(text, m.end()) is not None

    found = [NamedDay(m.group(0).strip(), *day, stamped(m)) for m, day in _written_days(text) if on(m)]
    found += [NamedDay(m.group(0), d.year, d.month, d.day, stamped(m)) for m in filter(on, _RELATIVE_RE.finditer(text))
              for d in [_relative_day(m)]]
    return [d for d in found if iso_day(2000 if d.year is None else d.year, d.month, d.day)]


# What joins the two ends of a span of days: "2026-12-18 to 2027-01-04", "Dec 18 – Jan 4", "3–9 May" is
# not read (its first end is no day of its own).
_SPAN_JOIN_RE = re.compile(r"\s{0,3}(?:to|until|till|through|thru|and|–|—|-{1,2}|→|->)\s{0,3}", re.IGNORECASE)


def spans_in(text: str) -> list[tuple[tuple[int | None, int, int], tuple[int | None, int, int]]]:
    """The spans of days the text writes ("From 2026-12-18 to 2027-01-04 main is frozen", "Dec 18 – Jan
    4", "between 3 May and 9 May 2031"), each as its first and last day, (year or None, month, day)."""
    found = sorted((m.start(), m.end(), day) for m, day in _written_days(text))
    return [(a[2], b[2]) for a, b in zip(found, found[1:]) if _SPAN_JOIN_RE.fullmatch(text, a[1], b[0])]


def within(day: NamedDay, first: tuple[int | None, int, int], last: tuple[int | None, int, int]) -> bool:
    """Whether the day falls in the span from `first` to `last`. An end written without its year has
    the other end's (a span that runs past New Year, "Dec 18 – Jan 4", wraps); a day named without
    its year is looked for in the span's years."""
    (y1, m1, d1), (y2, m2, d2) = first, last
    if y1 is None and y2 is None:   # on the calendar of any year
        a, b, md = (m1, d1), (m2, d2), (day.month, day.day)
        return a <= md <= b if a <= b else (md >= a or md <= b)
    if y1 is None or y2 is None:
        y1, y2 = (y2 - ((m1, d1) > (m2, d2)), y2) if y1 is None else (y1, y1 + ((m1, d1) > (m2, d2)))
    start, end = iso_day(y1, m1, d1), iso_day(y2, m2, d2)
    years = [day.year] if day.year is not None else list(range(y1, y2 + 1))
    return bool(start and end) and any(start <= (iso_day(y, day.month, day.day) or "") <= end for y in years)


def written_forms(day: NamedDay) -> list[str]:
    """How notes may write the day, lower-cased (what a literal search looks for): `2024-01-05`
    (`-01-05` in any year, for a day named without one), `01-05` (terse notes drop the year: "freeze
    05-19 → 05-21"), "5 january", "january 5", "5 jan", "jan 5",
    "jan. 5", "5th january", "5th of january", and in figures either way round: `05.01.2024`,
    `5/1/2024`, `1/5/2024`, `2024/01/05` (without its year `05.01.`, `5/1/`, `1/5/`). A form matching
    more than the day only keeps the notes from being said to lack it."""
    full = _MONTH_NAMES[day.month - 1]
    short = full[:3]
    n = str(day.day)
    th = n + ("th" if 10 <= day.day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10, "th"))
    iso = f"-{day.month:02d}-{day.day:02d}"
    y = "" if day.year is None else str(day.year)
    figures = {form for d, m in ((n, str(day.month)), (f"{day.day:02d}", f"{day.month:02d}"))
               for form in (f"{d}.{m}.{y}", f"{d}/{m}/{y}", f"{m}/{d}/{y}")}
    if y:
        figures |= {f"{y}/{day.month:02d}/{day.day:02d}", f"{y}.{day.month:02d}.{day.day:02d}"}
    return [f"{y}{iso}" if y else iso, iso[1:],
            *(f"{a} {b}" for m in (full, short) for a, b in ((n, m), (m, n), (th, m))), f"{short}. {n}",
            f"{th} of {full}", *sorted(figures)]


def days_named(text: str) -> list[str]:
    """The calendar days a question places itself on, as `YYYY-MM-DD` (a day that does not exist is
    none): what a section's date can be compared with (a daily note holds its day only in its name)."""
    return list(dict.fromkeys(iso_day(d.year, d.month, d.day) for d in named_days(text) if d.year is not None))


