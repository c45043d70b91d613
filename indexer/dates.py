"""Calendar days as notes and questions write them: `2024-01-05`, "5 January 2024", "the 3rd of
June", "on 14 May" (no year: which one is the notes' to say). A question's day is the day to look
in (search.answer); a month's name is what a journal's heading is read by (ingest.meta)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Iterable


# A calendar day as questions name it: `2024-01-05`, "5 January 2024", "January 5th, 2024", "the 3rd
# of June 2024" — or without its year ("on 14 May", "June 3rd"), then only with its month capitalised:
# lower-case "may" is a verb more often than a month.
_DAY_ISO_RE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")
_MONTH = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[A-Za-z]{0,6}(?![A-Za-z])"
_DAY_WORDS_RE = re.compile(rf"(?<![\w-])(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s(?:of\s)?(?P<m1>{_MONTH})\.?"
                           rf"|(?P<m2>{_MONTH})\.?\s(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?(?!\d))"
                           r"(?:,?\s(?P<year>\d{4}))?(?![\w:.]?\d)")


def month_of(word: str) -> int | None:
    """The month a word names, 1–12: its name or a cut of it three letters or more ("Sep", "Sept")."""
    w = word.lower()
    return next((i for i, name in enumerate(_MONTH_NAMES, 1) if len(w) >= 3 and name.startswith(w)), None)


def without_days(text: str, days: Iterable[str]) -> str:
    """The text with the spans naming any of `days` taken out (their month word is no name); a
    span without its year names each of them that falls on its month and day."""
    keep = set(days)
    month_days = {d[5:] for d in keep}

    def named(m: re.Match) -> bool:
        word = _word_day(m)
        return word is not None and (f"{word[1]:02d}-{word[2]:02d}" in month_days if word[0] is None
                                     else _iso(*word) in keep)

    return _DAY_WORDS_RE.sub(lambda m: "" if named(m) else m.group(0),
                             _DAY_ISO_RE.sub(lambda m: "" if m.group(0) in keep else m.group(0), text))


_BOUND_BEFORE_RE = re.compile(r"\b(since|after|before|until|till|by|through)\s+(the\s+)?$", re.IGNORECASE)


def _word_day(m: re.Match) -> tuple[int | None, int, int] | None:
    """(year or None, month, day) of a `_DAY_WORDS_RE` match that names a day, else None."""
    word, day = (m["m1"], m["d1"]) if m["d1"] else (m["m2"], m["d2"])
    month = month_of(word)
    if month is None or (m["year"] is None and not word[0].isupper()):
        return None
    return (int(m["year"]) if m["year"] else None), month, int(day)


def _iso(y: int, mo: int, d: int) -> str | None:
    try:
        return dt.date(y, mo, d).isoformat()
    except ValueError:
        return None


def _days_on(text: str) -> list[tuple[int | None, int, int]]:
    """(year or None, month, day) of every day the text places itself on — not a day it measures
    from or to ("since 2024-01-05", "before 5 January 2024")."""
    def on(m: re.Match) -> bool:
        return _BOUND_BEFORE_RE.search(text, max(0, m.start() - 16), m.start()) is None

    found: list[tuple[int | None, int, int]] = [
        (int(m.group(1)), int(m.group(2)), int(m.group(3))) for m in _DAY_ISO_RE.finditer(text) if on(m)]
    found += [w for m in filter(on, _DAY_WORDS_RE.finditer(text)) if (w := _word_day(m)) is not None]
    return found


def days_named(text: str) -> list[str]:
    """The calendar days a question places itself on, as `YYYY-MM-DD` (a day that does not exist is
    none): what a section's date can be compared with (a daily note holds its day only in its name)."""
    return list(dict.fromkeys(d for y, mo, day in _days_on(text) if y is not None and (d := _iso(y, mo, day))))


def days_without_year(text: str) -> list[tuple[int, int]]:
    """(month, day) of the days a question names without their year ("what did we do on 14 May?"):
    which year is the notes' to say (the newest they hold). A day no year has is none."""
    return list(dict.fromkeys((mo, day) for y, mo, day in _days_on(text) if y is None and _iso(2000, mo, day)))
