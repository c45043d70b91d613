"""Rules a memory corpus deserves, applied after fusion: relevance first, then what kind of
record a section is and when it was true.

Every rule is a small multiplier (or, for time, an order among near ties) so relevance still decides
between clearly different sections; the rules decide among near ties. The defaults below were
measured on the dev sets — docs/ranking.md has the before/after figures — and every one is
overridable in the config file's [ranking] table.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from remembrancer.indexer import dates, terms
from remembrancer.indexer.ingest import meta
from remembrancer.indexer.ingest.transcripts import COMPACTION_HEADING, DOC_TYPES as CONVERSATION_TYPES
from remembrancer.indexer.errors import UserError

# Questions about how to do something want the section that holds the procedure.
HOWTO_RE = re.compile(
    r"\b(how (do|can|should|would) (i|we|you|one)|how to|steps? (to|for)|procedure|what do (i|we) do|"
    r"safe way to|walk me through|what's the way to|step[- ]by[- ]step|playbook)\b", re.IGNORECASE)
# "Did it happen / is it done yet?" wants the newest account of the event (a journal entry),
# not the plan that announced it.
OUTCOME_RE = re.compile(
    r"^\W*(did|has|have|had|is|are|was|were)\b.*\b(yet|actually|finished|done|happen|happened|go ahead|"
    r"work|live|complete|completed|dropped|gone|end up|rolled out|succeed|finally|fixed|resolved|"
    r"back to normal|back online|recovered|merged|released|shipped)\b", re.IGNORECASE)
# "Is X still …?" asks whether a state survived: settled by the newest account, like an outcome.
STILL_RE = re.compile(r"^\W*(is|are|do|does|has|have)\b.*\bstill\b", re.IGNORECASE)
# "Is it still planned?" asks whether an intention survived: the newest decision answers it.
class _InOrder:
    """`first` then, later on the same line, `then` (or `alone` anywhere): what `A.*B` means,
    without the backtracking that makes `\bA\b.*\bB\b` quadratic on a long query repeating A."""

    def __init__(self, first: re.Pattern, then: re.Pattern, alone: re.Pattern | None = None):
        self.first, self.then, self.alone = first, then, alone

    def search(self, text: str) -> bool:
        if self.alone is not None and self.alone.search(text):
            return True
        pos = 0
        while (m := self.first.search(text, pos)) is not None:
            line_end = text.find("\n", m.end())
            line_end = len(text) if line_end < 0 else line_end
            if self.then.search(text, m.end(), line_end):  # the earliest A leaves B the most room
                return True
            pos = line_end + 1
        return False


PLAN_STATUS_RE = _InOrder(re.compile(r"\b(still|any ?more)\b", re.IGNORECASE),
                          re.compile(r"\b(plan|planning|planned|going to|intend\w*)\b", re.IGNORECASE))
# "What happened / why did it break?" asks about an event: the journal is the record of what was
# seen, the host/service records only summarise it.
PAST_RE = re.compile(
    r"\b(did|was|were|had|went|happened|decided|wasn't|weren't|didn't|couldn't|hadn't|back when|"
    r"that time|last (week|month|time)|the (first|last) time)\b", re.IGNORECASE)
# A log or error line pasted as it is (no question word, no "?") asks where it was seen before: the
# journal keeps what was seen.
ERROR_WORDS_RE = re.compile(r"\b(error|err|fatal|panic|exception|failed|failure|refused|denied|forbidden|cannot|"
                            r"can't|unable|not allowed|exceeded|timed out|timeout|no such|not found|invalid|"
                            r"rejected|unavailable|deprecated|oom|killed|crash\w*)\b",
                            re.IGNORECASE)
# "What is it now?" — with FACT_RE, a question about the present: the journal is history there.
CURRENT_RE = re.compile(
    r"\b(still|any ?more|these days|at the moment|currently|current|right now|now|latest|today|"
    r"end up|ended up)\b", re.IGNORECASE)
# A question that asks for a value as it stands now ("which release is it on right now?", "what is X
# set to these days?") opens with a question word: the newest account of it settles it, as for an
# outcome. A story that only mentions now ("my jobs ran fine, now none start — why?") is a symptom.
ASKS_RE = re.compile(r"^\W*(what|what's|which|how|when|where|who|why)\b", re.IGNORECASE)
# "When did X last happen? What's the most recent Y?" asks for the newest occurrence of something
# that recurs: its newest account answers, as for an outcome. "last" before a span of time ("last
# week", "the last 30 days") names a period instead, and "the last step" a place in an order.
LATEST_RE = re.compile(
    r"\b(most recent(ly)?|latest|newest|lately|last time)\b|"
    r"(?<!\bat )\blast\b(?!\s+(?:(?:week|month|year|quarter|night|sprint|weekend|summer|winter|spring|autumn|"
    r"fall|monday|tuesday|wednesday|thursday|friday|saturday|sunday|hour|day|days|step|steps|resort|few|one|"
    r"two|three|four|five)\b|\d))", re.IGNORECASE)
# "When did we last replay …? When was the last time …?" asks when something that recurs last
# happened: an account of the day it did answers, not the procedure for doing it.
LAST_TIME_RE = re.compile(r"\bwhen\b[^?.;]*\blast\b|\blast time\b", re.IGNORECASE)
# "Who is Benedikt?" asks who a person is. People keep no host or service record: the note that
# introduces one is as often the journal entry of the day they came up as a page of people.
WHO_IS_RE = re.compile(r"^\W*(?i:who)(?:['’]s|\s+is|\s+was)\s+[A-Z]")
# A reason or a cause asked for: "why …", "how come …", "what caused …", "what went wrong …", "the root cause of …".
WHY_RE = re.compile(r"\bwhy\b|\bhow come\b|\bwhat (?:was |were |is )?(?:the )?(?:root )?causes?\b|\bwhat caused\b|"
                    r"\bwhat (?:went|goes|was|is) wrong\b|"
                    r"\breasons? (?:for|why|behind)\b", re.IGNORECASE)
# A question in the present tense ("which port does …", "what's the retention …") asks for a fact
# as it stands.
FACT_RE = re.compile(r"\b(what|what's|which|where|who|how (many|much|big|long|often|are|is|does|do)|"
                     r"when (does|do|is|are))\b", re.IGNORECASE)
# A how-to question asks for one part of a runbook (the conventions name them: When to use,
# Before you start, Steps, a Verify under Steps, Rollback): undoing ("how do I roll it back?"),
# checking, or else the steps.
ROLLBACK_Q_RE = re.compile(r"\b(roll ?back|roll(ing)? (\w+ ){1,3}back|undo|revert|back (\w+ )?out)\b", re.IGNORECASE)
VERIFY_Q_RE = _InOrder(re.compile(r"\b(check|confirm|make sure|tell)\b", re.IGNORECASE),
                      re.compile(r"\b(worked|works|right|ok|okay|succeeded|correct|came out|healthy)\b", re.IGNORECASE),
                      alone=re.compile(r"\bverify\b", re.IGNORECASE))
# "How do I rotate the key and check it worked?" asks to do a thing and then check it: the procedure,
# whose last steps are its checks — not the check alone.
THEN_VERIFY_RE = re.compile(r"\b(and|then),?\s+(then\s+)?(check|confirm|verify|make sure|test)\b", re.IGNORECASE)
# Sections of a host/service record that keep its past (the conventions' "Known issues", "History"):
# history, like the journal, when the question asks about the present.
HISTORY_HEADING_RE = re.compile(r"^\W*(known issues|issues|history|incidents?|changelog|changes)\b", re.IGNORECASE)
HISTORY_Q_RE = re.compile(r"\b(issues?|history|incidents?|problems?|changed?)\b", re.IGNORECASE)
RECORD_TYPES = ("host", "service")
ReadTexts = Callable[[list[int]], list]   # section ids → their rows with text (a rule reads a few)
OwnDate = Callable[[object], "str | None"]   # a section row → the day the notes themselves date it, or None
# Conversations: the newest exchange this near the best settles "is it still / what is it now"
# (docs/conversations.md: 0.1 → 0.25 with the recap stepped back, on two held-out sets and the dev set).
CONVERSATION_OUTCOME_MARGIN = 0.25
# A prompt asking for a recap — what is still open, left to do, where things stand — is answered by
# an exchange that restates the earlier ones, dates and states included, as a compaction summary does.
RECAP_PROMPT_RE = re.compile(
    r"\b(what'?s (still )?(left|open|outstanding)|what is (still )?(left|open)|anything (still )?open|left to do|open items|"
    r"recap|sum (it |things |everything )?up|summari[sz]e|where are we)\b|^\W*status\b[.:?!]", re.IGNORECASE)


@dataclass
class RankingConfig:
    type_weights: dict[str, float] = field(default_factory=dict)   # doc type → multiplier (none by default)
    # "Did it happen? Is it still so? What is it now?": among sections this close to the best, the
    # newest dated one goes first — the latest account settles it. Chosen on memory-dev-3 (0.2–0.4
    # alike; 0.2 is the rules' own swing bound), checked on the others (docs/ranking.md, "Memory rules").
    outcome_tie_margin: float = 0.2
    detail_margin: float = 0.1           # a section inside the best one, this near it, goes first
    # A section or document marked superseded / obsolete says it no longer holds: for a question
    # about how things are or how to do them (not about the past or history) it steps back.
    # Chosen on memory-dev-3 (0.5–0.8 alike), checked on the others (docs/ranking.md).
    stale_factor: float = 0.8
    fact_history_factor: float = 0.8     # "what is it?" in the present tense: the journal and a record's
                                         # Known issues / History are history
    howto_steps_boost: float = 1.3       # a how-to question: the runbook section that is the procedure
                                         # asked for (numbered steps; its Rollback or Verify part for
                                         # "how do I roll it back / check it worked?")
    # The rules together move a section by at most this share of the best fused score, so they
    # decide near ties and never overturn a clearly stronger relevance signal (docs/ranking.md).
    rule_swing: float = 0.2
    # A conversation's compaction summary, or a recap the user asked for (RECAP_PROMPT_RE), restates
    # the exchanges before it: it answers only where they do not (indexer/ingest/transcripts.py).
    # No effect on notes, which have neither.
    compaction_factor: float = 0.85
    enabled: bool = True

    @classmethod
    def conversations(cls) -> "RankingConfig":
        """The rules a conversations corpus starts with (docs/conversations.md has the figures):
        the notes' rules read doc types conversations do not have; "is it still / did we finally"
        is settled by the newest exchange that is nearly as relevant as the best one."""
        return cls(outcome_tie_margin=CONVERSATION_OUTCOME_MARGIN, detail_margin=0.0)

    @classmethod
    def from_dict(cls, d: dict, doc_types: tuple[str, ...] | None = None) -> "RankingConfig":
        """The [ranking] table, each value checked by kind and range: a typo'd key, a string where a
        number belongs ("x", or "false" — which Python reads as true), a weight for a doc type that
        does not exist or a factor that could only break the ranking is refused by name."""
        cfg = cls()
        for k, v in d.items():
            if not hasattr(cfg, k):
                raise UserError(f"unknown [ranking] key {k!r}", param="ranking",
                                options=sorted(cls.__dataclass_fields__))
            if k == "type_weights":
                cfg.type_weights = {**cfg.type_weights, **_type_weights(v, doc_types)}
            elif isinstance(getattr(cfg, k), bool):
                if not isinstance(v, bool):
                    raise UserError(f"[ranking] {k} must be true or false, got {v!r}", param=f"ranking.{k}",
                                    hint=f"{k} = {str(getattr(cfg, k)).lower()} (a TOML boolean, not a string)")
                setattr(cfg, k, v)
            else:
                low, high = SETTING_RANGES[k]
                setattr(cfg, k, _number(v, f"ranking.{k}", low, high, default=getattr(cfg, k)))
        return cfg


# The range each numeric [ranking] setting may take: a share of the best score, or a multiplier.
SETTING_RANGES = {"outcome_tie_margin": (0.0, 1.0), "detail_margin": (0.0, 1.0), "rule_swing": (0.0, 1.0),
                  "stale_factor": (0.0, 10.0), "fact_history_factor": (0.0, 10.0), "compaction_factor": (0.0, 10.0),
                  "howto_steps_boost": (0.0, 10.0)}
WEIGHT_RANGE = (0.0, 10.0)


def _number(v, name: str, low: float, high: float, default: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (low <= v <= high) or v != v:
        raise UserError(f"[{name.replace('.', '] ', 1)} must be a number from {low:g} to {high:g}, got {v!r}",
                        param=name, hint=f"the default is {default:g}")
    return float(v)


def _type_weights(v, doc_types: tuple[str, ...] | None) -> dict[str, float]:
    if not isinstance(v, dict):
        raise UserError(f"[ranking] type_weights must be a table of doc type = multiplier, got {v!r}",
                        param="ranking.type_weights", hint="type_weights = { plan = 0.85, journal = 0.9 }")
    out = {}
    for t, w in v.items():
        if doc_types is not None and t not in doc_types:
            near = difflib.get_close_matches(t, doc_types, n=1)
            raise UserError(f"[ranking] type_weights: unknown doc type {t!r}"
                            + (f" (did you mean {near[0]!r}?)" if near else ""),
                            param="ranking.type_weights", options=list(doc_types),
                            hint="the doc types are the built-in ones and those [[layout]] names")
        out[str(t)] = _number(w, f"ranking.type_weights.{t}", *WEIGHT_RANGE, default=1.0)
    return out


@dataclass
class Intent:
    howto: str      # a procedure: "steps", "verify" or "rollback" ("" when the question is not a how-to)
    outcome: bool   # whether something happened / is done / is still planned
    past: bool      # an event: what happened, why it broke, where this log line was seen
    fact: bool      # a fact as it stands now
    history: bool = False  # it asks about issues/history itself
    latest: bool = False   # the newest occurrence of something that recurs ("when did X last …?")
    current: bool = False  # a value as it stands now, asked for in so many words (ASKS_RE, CURRENT_RE)
    person: bool = False   # who someone named is (WHO_IS_RE)
    why: bool = False      # a reason or a cause (WHY_RE)
    last_time: bool = False  # when something last happened (LAST_TIME_RE), a kind of `latest`
    of_record: bool = False  # it names a thing the notes keep a record of (a host's, a service's)


def intent(query: str, latest: bool = True) -> Intent:
    """Read what kind of answer the question wants from its wording: a procedure, an outcome, the
    newest occurrence of something (`latest`: whether to read it), an event in the past, or a fact
    as it stands now (the precedence is that order)."""
    howto = ""
    if HOWTO_RE.search(query):
        howto = ("rollback" if ROLLBACK_Q_RE.search(query) else
                 "verify" if VERIFY_Q_RE.search(query) and not THEN_VERIFY_RE.search(query) else "steps")
    outcome = bool(OUTCOME_RE.search(query) or PLAN_STATUS_RE.search(query) or STILL_RE.search(query))
    question = "?" in query or bool(FACT_RE.search(query) or howto or outcome)
    history = bool(HISTORY_Q_RE.search(query))
    # A log line is a statement with an error word, or a sentence (not a few keywords) holding an identifier.
    n_words = len(query.split())
    log_line = not question and ((n_words >= 3 and bool(ERROR_WORDS_RE.search(query))) or
                                 (n_words >= 5 and bool(terms.literal_probes(query))))
    newest = latest and not (howto or outcome) and bool(LATEST_RE.search(query))
    past = not (outcome or newest) and bool(PAST_RE.search(query) or log_line)
    fact = not (howto or outcome or past or newest) and bool(CURRENT_RE.search(query) or FACT_RE.search(query))
    current = fact and bool(ASKS_RE.match(query) and CURRENT_RE.search(query))
    person = fact and bool(WHO_IS_RE.match(query))
    why = not howto and bool(WHY_RE.search(query))
    last_time = newest and bool(LAST_TIME_RE.search(query))
    return Intent(howto, outcome, past, fact, history, newest, current, person=person, why=why, last_time=last_time)


_FENCED_RE = re.compile(r"^\s{0,3}(```|~~~).*?^\s{0,3}\1", re.MULTILINE | re.DOTALL)
_ORDERED_ITEM_RE = re.compile(r"^\s{0,3}\d{1,2}[.)]\s", re.MULTILINE)
_STEP_TITLE_RE = re.compile(r"^\s*(step\s*)?\d{1,2}[.):]\s", re.IGNORECASE)


def reads_text(s, it: Intent, cfg: RankingConfig) -> bool:
    """Whether the rules read this section's text, not only its heading, type and date: a
    runbook's, for a how-to question (is_procedure). Search reads the text of these only."""
    return bool(cfg.enabled and it.howto and cfg.howto_steps_boost != 1.0 and s.doc_type == "runbook")


# The runbook part that undoes or checks, by its heading (`## Rollback`, `### Verify`).
PART_HEADING_RE = {
    "rollback": re.compile(r"\b(roll ?back|rolling back|undo|revert\w*|back ?out)\b", re.IGNORECASE),
    "verify": re.compile(r"\b(verify|verification|validat\w+|checks?|checking|confirm\w*)\b", re.IGNORECASE),
}


def answers_howto(s, it: Intent) -> bool:
    """Is this runbook section the procedure the how-to question asks for: the part that undoes or
    checks when the question asks to undo or check (the steps only do), else the steps — and not
    the part that undoes them, which numbers its steps too ("steps to pause payouts" is not how to
    un-pause them)."""
    part = PART_HEADING_RE.get(it.howto)
    if part is not None:
        return bool(part.search(s.title or ""))
    return is_procedure(s) and not PART_HEADING_RE["rollback"].search(s.title or "")


def is_procedure(s) -> bool:
    """A section that is a procedure: a numbered step heading (`### 3. Promote the replica`), or
    a numbered list of two steps or more outside code — where a runbook keeps what to do, as
    opposed to its introduction, which names the topic in the question's words. (Runbooks only:
    in other documents a numbered list is as often a plan or a list of options.)"""
    if _STEP_TITLE_RE.match(s.title or ""):
        return True
    return len(_ORDERED_ITEM_RE.findall(_FENCED_RE.sub("", s.content or ""))) >= 2


def _in_history(heading: str) -> bool:
    return any(HISTORY_HEADING_RE.match(part) for part in heading.split(" > ")[1:])


def date_value(date: str | None) -> int | None:
    if not date:
        return None
    try:
        y, m, d = (int(x) for x in date.split("-"))
        return y * 372 + m * 31 + d
    except ValueError:
        return None


def rerank(cands: dict, rows: dict, it: Intent, cfg: RankingConfig, read_texts: ReadTexts | None = None,
           own_date: OwnDate | None = None) -> None:
    """Adjust candidate scores in place. `rows` maps section id → SectionRow (its text may be left
    out); `read_texts(ids)` gives a few sections' rows with their text, for a rule that reads it;
    `own_date(row)` the day the notes date a section (not a commit's: answer._own_date)."""
    if not cfg.enabled or not cands:
        return
    swing = cfg.rule_swing * max(c.score for c in cands.values())
    for sid, c in cands.items():
        s = rows.get(sid)
        if s is None:
            continue
        factor = 1.0

        def scale(f: float, why: str) -> None:
            nonlocal factor
            factor *= f
            c.why.append(f"{why} ×{round(f, 2):g}")

        w = cfg.type_weights.get(s.doc_type, 1.0)
        if s.doc_type == "journal":
            # A value asked for as it is now is settled by the newest account (_newest_of_near_ties).
            # Of a thing the notes keep a record of, the record states it and the journal is history;
            # of anything else, the entry of the day it changed is such an account, and the entry
            # that introduces a person tells who they are.
            if it.fact and (it.of_record or not (it.current or it.person)):
                w *= cfg.fact_history_factor
        elif it.fact and not it.history and s.doc_type in RECORD_TYPES and _in_history(s.heading):
            scale(cfg.fact_history_factor, "the record's history, for a question about now")
        if w != 1.0:
            scale(w, f"type {s.doc_type}")
        if s.doc_type in CONVERSATION_TYPES and cfg.compaction_factor != 1.0:
            if s.heading == COMPACTION_HEADING:
                scale(cfg.compaction_factor, "a compaction summary: it restates earlier exchanges")
            elif RECAP_PROMPT_RE.search(s.heading or ""):
                scale(cfg.compaction_factor, "a recap the prompt asked for: it restates earlier exchanges")
        if cfg.stale_factor != 1.0 and (s.stale or s.doc_stale) and not (it.past or it.history):
            scale(cfg.stale_factor, "marked superseded, for a question about how things are")
        if reads_text(s, it, cfg) and answers_howto(s, it):
            scale(cfg.howto_steps_boost, "a runbook's procedure, for a how-to question" if it.howto == "steps"
                  else f"the runbook's {it.howto} part, for a question asking for it")
        moved = c.score * factor
        if swing:
            moved = min(max(moved, c.score - swing), c.score + swing)
        c.score = moved
    if it.howto and cfg.howto_steps_boost > 1.0:
        _procedure_first(cands, rows, it, 1 - 1 / cfg.howto_steps_boost)
    # The detail before its summary within a document, then the newest of the near ties across
    # them: in the other order the detail rule undid the newest pick, putting an older part of the
    # chosen document (its superseded procedure, say) above the account that settles the question.
    # Not for "is it still so? did it happen?": a record's opening states what holds now ("LAN + wg0
    # only"), and its parts that name the thing as well are no detail of that answer.
    if cfg.detail_margin and not it.outcome:
        _detail_before_summary(cands, rows, cfg.detail_margin)
    if (it.outcome or it.current or it.latest) and cfg.outcome_tie_margin:
        # the last time something happened is an account's day; a thing as it is now may be told by the
        # record edited last, whose commit says when (answer._own_date)
        _newest_of_near_ties(cands, rows, cfg.outcome_tie_margin, read_texts, own_date if it.latest else None)


def encloses(outer, inner) -> bool:
    """Is `outer` a section that `inner` sits inside (the preamble, or an ancestor heading)?"""
    if outer.doc_id != inner.doc_id or outer.id == inner.id:
        return False
    return outer.heading == "" or inner.heading.startswith(outer.heading + " > ")


# A part headed "Overview" or "Summary" is the document's introduction under another name: not the
# detail that answers, which _detail_before_summary puts before the section that encloses it.
SUMMARY_HEADING_RE = re.compile(r"^\W*(overview|summary|introduction|intro|about|tl;?dr)\W*$", re.IGNORECASE)


# A part that says why: "Why two points", "Root cause", "Causes", "Rationale". "Why use it" (or
# "Why choose uv?") is a pitch for the thing, not the reason for something that happened.
REASON_HEADING_RE = re.compile(r"^\W*(?:why\b(?!\W+(?:use|choose|pick|adopt)\b)|(?:root )?causes?\b|reasons?\b|"
                               r"rationale\b|motivation\b|because\b)", re.IGNORECASE)


def is_reason(s) -> bool:
    """Is section `s` a part headed as the reason or cause of something?"""
    return bool(REASON_HEADING_RE.match(own_heading(s)))


# A decision record's parts (ADR, MADR): the context it was taken in, and the decision itself.
CONTEXT_HEADING_RE = re.compile(r"^\W*(?:context|background|problem(?: statement)?|context and problem statement)\W*$",
                                re.IGNORECASE)
DECISION_HEADING_RE = re.compile(r"^\W*(?:the )?decision(?: outcome)?s?\W*$", re.IGNORECASE)


def is_context(s) -> bool:
    """Is section `s` a decision record's context (a part headed "Context", "Background", "Problem")?"""
    return bool(CONTEXT_HEADING_RE.match(own_heading(s)))


def is_decision(s) -> bool:
    """Is section `s` a decision record's decision (a part headed "Decision", "Decision outcome")?"""
    return bool(DECISION_HEADING_RE.match(own_heading(s)))


_WHY_SOMETHING_RE = re.compile(r"^\W*why\W+\w", re.IGNORECASE)


def names_its_reason(s) -> bool:
    """A reason part headed by what it explains ("Why nobody noticed for 9 hours", "Why two
    points"), not by the word alone ("Root cause", "Why?"): of a document's topic it may explain
    another thing than the question asks about."""
    return bool(_WHY_SOMETHING_RE.match(own_heading(s)))


def own_heading(s) -> str:
    """A section's own heading: the last part of its breadcrumb."""
    return (s.heading or "").rsplit(" > ", 1)[-1]


def _detail_before_summary(cands: dict, rows: dict, margin: float) -> None:
    """A document's preamble or introduction names what the whole document is about, so it matches
    a question about any part of it about as well as the part that answers: when the best section
    encloses another candidate within `margin` of its score, the enclosed one — the detail that
    answers — goes first (repeated down the breadcrumb). A part headed as a summary ("Overview") is
    not such a detail."""
    best_sid = min(cands, key=lambda sid: (-cands[sid].score, sid))
    for _ in range(6):
        top, c_top = rows.get(best_sid), cands[best_sid]
        if top is None:
            return
        inside = [sid for sid, c in cands.items() if sid in rows and c.score >= c_top.score * (1 - margin)
                  and encloses(top, rows[sid]) and not SUMMARY_HEADING_RE.match(own_heading(rows[sid]))]
        if not inside:
            return
        sid = min(inside, key=lambda i: (-cands[i].score, i))
        c = cands[sid]
        c.why.append(f"inside the best section ({top.heading or 'the preamble'}), within {margin:.0%} of it:"
                     f" the detail before its summary +{c_top.score - c.score + 1e-6:.3f}")
        c.score = c_top.score + 1e-6
        best_sid = sid


def _procedure_first(cands: dict, rows: dict, it: Intent, reach: float) -> None:
    """A how-to question is answered by a runbook's procedure, yet the runbook's introduction, its
    "When to use" or its "Troubleshooting" name the symptom in the question's words and match it
    better. When the best runbook among the candidates is within `reach` of the best score (as near
    as the how-to boost can carry a section), the part of it the question asks for goes first."""
    best = max(c.score for c in cands.values())
    order = sorted((sid for sid in cands if sid in rows), key=lambda sid: (-cands[sid].score, sid))
    runbook = next((sid for sid in order if rows[sid].doc_type == "runbook"), None)
    if runbook is None or cands[runbook].score < best * (1 - reach):
        return
    doc = rows[runbook].doc_id
    part = next((sid for sid in order if rows[sid].doc_id == doc and answers_howto(rows[sid], it)), None)
    if part is not None and cands[part].score < best:
        c = cands[part]
        c.why.append(f"the part of {rows[part].path} the how-to question asks for, its runbook within "
                     f"{reach:.0%} of the best +{best - c.score + 1e-6:.3f}")
        c.score = best + 1e-6


def _newest_of_near_ties(cands: dict, rows: dict, margin: float, read_texts: ReadTexts | None = None,
                         own_date: OwnDate | None = None) -> None:
    """Whether something happened is settled by the newest account of it: among the sections
    within `margin` of the best score, the newest dated one goes first (the rest keep their order).
    On the same day, an entry written that day goes before a section dated by its file's `updated:`
    (written_that_day). With `read_texts`, a section is as new as the newest day its text writes
    (_days_written): the newest occurrence of something is often a line of a log. With `own_date`,
    a section is dated only as the notes date it: a commit's day is when a file was last edited or
    imported, no account of anything."""
    best = max(c.score for c in cands.values())
    near = [sid for sid, c in cands.items() if c.score >= best * (1 - margin) and sid in rows]
    when = {sid: date_value(own_date(rows[sid]) if own_date else rows[sid].date) for sid in near}
    if read_texts is not None:
        when = _days_written(when, rows, read_texts)
    near = [sid for sid in near if when[sid] is not None]
    if len(near) < 2:
        return
    newest = max(near, key=lambda sid: (when[sid], written_that_day(rows[sid]), cands[sid].score))
    c = cands[newest]
    if c.score < best:
        written = "" if when[newest] == date_value(rows[newest].date) else ", by a day its text writes"
        c.why.append(f"newest of the near ties (within {margin:.0%} of the best{written}) +{best - c.score + 1e-6:.3f}")
        c.score = best + 1e-6


def _days_written(when: dict, rows: dict, read_texts: ReadTexts) -> dict:
    """Each section's date, or the newest day (`YYYY-MM-DD`) its text writes if later: a record's or
    a runbook's log ("Rotation log", "History", a maintenance table) keeps one occurrence a line, and
    the section is dated by its file, last edited whenever. A day after today and after every dated
    section among the candidates is still to come: a plan's target, not an occurrence."""
    present = present_day(rows.values())
    texts = {s.id: s.content or "" for s in read_texts(list(when))}
    out = {}
    for sid, own in when.items():
        out[sid] = max([d for d in (own, *_days_in(texts.get(sid, ""), present)) if d is not None], default=None)
    return out


def present_day(rows) -> int:
    """Today, or the newest day a section among `rows` is dated if later (notes dated ahead of the
    clock): a day the text writes past it is still to come — a plan's target, not an occurrence."""
    return max([date_value(dates.today().isoformat()), *filter(None, (date_value(r.date) for r in rows))])


def _days_in(text: str, present: int) -> list[int]:
    return [d for d in (date_value(day) for day in meta.dates_in(text)) if d <= present]


def entry_day(s, present: int) -> int | None:
    """The day of an entry in a log kept as one document — a decision log's `## D-013 …`, an
    estimate redone as `## R5 — 2045-07-02`, a dated heading of a notebook: the day its own heading
    gives, else the newest day its text writes (`2045-06-23. MX25R64 allocation …`). Not its file's
    date, which every entry of the document shares."""
    if written_that_day(s):
        return date_value(s.date)
    return newest_day_written(s, present)


# "Superseded by ADR-0007", "replaced by [D-010](decisions.md#d-010)": the name (or a link's text) and
# the link's target, if any. A name holds a digit (an ADR's, a decision's, a version's number).
SUCCESSOR_RE = re.compile(r"(?i)\b(?:superseded|replaced|obsoleted)\s+by\s*:?\s*(?:\[(?P<text>[^\]\n]{1,80})\]"
                          r"\((?P<target>[^)\s#]{1,200})(?:#[^)\s]{0,200})?\)|(?P<name>[A-Za-z]{1,20}[-_ ]?\d[\w.-]{0,20}))")


def successor_named(text: str) -> tuple[str, str | None] | None:
    """(name, link target or None) of the successor a superseded document's text names, or None."""
    m = SUCCESSOR_RE.search(text)
    name = (m.group("text") or m.group("name")).strip().rstrip(".,;:") if m else ""
    if len(name) < 4:   # "v2" names too little to find ("ADR-0007", "D-010" do)
        return None
    return name, m.group("target")


# A part of a record that keeps one occurrence a line: "Rotation log", "Change history", "Release and
# rollback history", "Backfill log", "Timeline (2044)". Its file's date says when the file was last
# touched; the days its lines write say when the thing last happened.
LOG_HEADING_RE = re.compile(r"(?:^|[\s-])(?:history|log|changelog|timeline)\W*(?:\([^)]*\)\W*)?$", re.IGNORECASE)


def is_log(s) -> bool:
    """Is the section a record's log: a part (not the document itself) headed as one?"""
    return " > " in (s.heading or "") and bool(LOG_HEADING_RE.search(own_heading(s)))


def newest_day_written(s, present: int) -> int | None:
    """The newest day, up to `present`, that the section's text writes."""
    return max(_days_in(s.content or "", present), default=None)


def written_that_day(s) -> bool:
    """Is the section's date its own — a heading that names the day (a journal entry, a dated
    History line) or a daily note's file name — rather than its file's front matter? A record's
    `updated:` says the file was touched that day, not which of its sections was: the day the plan
    was dropped, the journal entry that says so answers "is it still planned?", not the record's
    History the same edit touched."""
    chain = s.heading.split(" > ") if s.heading else []
    return bool(meta.document_date(s.path, {}) or meta.heading_gives(s.date, chain, s.path))
