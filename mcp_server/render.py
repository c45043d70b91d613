"""Text for the MCP tools' content blocks: what the model reads.

Every rendering shows only what the structured response holds (the api already trimmed that to
its token budget), so the text can never be larger than the data it describes.
"""

import json
import time

from remembrancer.indexer.answers import (CARRY_SECTION_TOKENS, DocumentList, HistoryAnswer, LatestAnswer, MemoryRow,
                                          NeighborsAnswer, Outline, Page, Result, SearchAnswer, StatusAnswer,
                                          VerifyAnswer, freshness_line)
from remembrancer.indexer.config import COMMIT_TYPE, shown_root
from remembrancer.indexer.terms import elide, one_line


def _sentence(message: str) -> str:
    """The engine's message ("no section matches …") as a sentence, so the next one is not run into it."""
    message = message.strip()
    return message[:1].upper() + message[1:] + ("" if message.endswith((".", "!", "?")) else ".")


def also_text(headings: list[str]) -> str:
    """The other matching sections of a document; a preamble's heading is empty, so it is named."""
    return "; ".join(h or "(preamble)" for h in headings)


def _loc(lines: list[int] | None) -> str:
    lines = lines or ["?", "?"]
    return f"lines {lines[0]}-{lines[1]}"


def _head(heading: str | None) -> str:
    return heading or "(preamble)"


def _cut_from(r: Result) -> str:
    """A cut that does not begin at the section's start says where it does (the part that matched)."""
    if r.content_lines and r.lines and r.content_lines[0] > r.lines[0]:
        return (f"[… lines {r.lines[0]}–{r.content_lines[0] - 1} left out; from line {r.content_lines[0]}, "
                "the part that matched:]\n")
    return ""


def _facts(r: Result) -> str:
    bits = [_loc(r.lines), r.type or "?"]
    if r.corpus:
        bits.insert(0, f"from the {r.corpus}")
    if r.session_id:   # a conversation's exchange: which session and prompt, and when
        bits += [f"session {r.session_id}", f"prompt uuid {r.uuid or '?'}", r.timestamp or "undated"]
        if r.branch:
            bits.append(f"branch {r.branch}")
    elif r.date:
        bits.append(r.date)
    if r.commit:   # a commit: which one, and whose
        bits.append(f"commit {r.commit} by {r.author or '?'}")
    bits.append(f"~{'?' if r.tokens is None else r.tokens} tokens")
    if r.stale:
        bits.append("marked stale/superseded")
    return ", ".join(bits)


def commits_text(r: Result) -> str | None:
    """An exchange's commits, one line: each with where it is and whether it landed."""
    if not r.commits:
        return None
    out = []
    for c in r.commits:
        where = (f"landed on {c.default_branch or 'the default branch'}" if c.landed
                 else "not landed" if c.landed is False else "landing unknown")
        out.append(f"{(c.commit or c.sha)[:12]} {c.subject or ''!r} in {c.repo or '?'} ({where}; {c.cited_as})")
    return "Commits: " + "; ".join(out)


def _pointer(i: int, r: Result, carried: bool = False) -> str:
    """One more result: where it is and a snippet — or, `carried`, its whole text (a short runner-up)."""
    out = f"{i}. {one_line(r.path)} § {_head(r.heading)} — {_facts(r)}"
    if carried and r.content is not None:
        out += "\n\n" + r.content.strip("\n") + "\n" + (f"{commits_text(r)}\n" if r.commits else "")
    elif r.snippet:
        out += f"\n   {r.snippet}"
    return out


def search_text(out: SearchAnswer) -> str:
    """For the model: the best section in full, short runners-up in full, pointers to the rest,
    and what to try when weak."""
    parts = [freshness_line(out.index)]
    if out.conversations_index is not None:
        parts[0] += "\nConversations: " + freshness_line(out.conversations_index)
    if out.commits_index is not None:
        parts[0] += "\nCommits: " + freshness_line(out.commits_index)
    for n in out.notes or []:
        parts.append(f"Note: {n}")
    results = out.results
    weak = out.best_weak or []
    if out.no_strong_match and weak:
        why = "; ".join(out.why_no_strong_match or [])
        parts.append(f"No strong match for {elide(out.query)!r}{' (' + why + ')' if why else ''}. "
                     "The candidates below are weak and may not "
                     "answer the question; that is not proof the memory lacks it — rephrase, drop filters, or "
                     "try exact=true for literal strings.")
        # a short candidate comes whole, as a short runner-up does: a wrongly doubted answer is still in hand
        parts += [_pointer(i, r, carried=(r.tokens or 0) <= CARRY_SECTION_TOKENS) for i, r in enumerate(weak, 1)]
    elif not results:
        other = ("search without exact for the meaning" if out.mode == "exact"
                 else "try exact=true for literal strings")
        parts.append(f"No strong match for {elide(out.query)!r}: " + _sentence(_empty_why(out))
                     + f" An empty result is not proof of absence: rephrase, widen the filters, or {other}.")
    else:
        best = results[0]
        head = f"Best match: {one_line(best.path)} § {_head(best.heading)} — {_facts(best)}, {best.provenance or '?'}"
        if out.found_by and out.found_by != out.query:
            head += f" (found by the rephrasing {elide(out.found_by)!r})"
        body = best.content
        if body is None:
            parts.append(head + (f"\n{best.snippet}" if best.snippet else ""))
        else:
            body = body.rstrip("\n")
            if best.content_truncated and best.commit:   # no file to read: git has the message
                body += f"\n[… cut to fit the response; `git show {best.commit}` gives the whole message]"
            elif best.content_truncated:
                where = f"uuid={best.uuid!r}" if best.uuid else f"heading={best.heading!r}"
                body = _cut_from(best) + body + (f"\n[… cut to fit the response; read(path={best.path!r}, {where}) "
                                                 "gives the whole section]")
            parts.append(f"{head}\n\n{body}" + (f"\n\n{commits_text(best)}" if best.commits else ""))
        if best.also:
            parts.append("Also in this document: " + also_text(best.also))
        if len(results) > 1:
            carried = any(r.content is not None for r in results[1:])
            how = ("`git show <commit>` shows one's diff" if all(r.commit for r in results[1:])   # no file to read
                   else "open the rest with read(path, heading)" if carried else "open one with read(path, heading)")
            parts.append((f"Other matches (short ones in full; {how}):\n" if carried else f"Other matches ({how}):\n")
                         + "\n".join(_pointer(i, r, carried=True) for i, r in enumerate(results[1:], 2)))
        if out.truncated:   # a filters-only listing
            parts.append("More sections match the filters (newest first): raise limit, or narrow the filters.")
    if out.left_out:
        parts.append("Left out to fit the budget: " + "; ".join(map(one_line, out.left_out)))
    return "\n\n".join(parts)


def _empty_why(out: SearchAnswer) -> str:
    """Why a search came back with nothing at all: the engine's message, or the abstention's reasons."""
    return out.message or "; ".join(out.why_no_strong_match or []) or "no section matches"


def search_terminal_text(out: SearchAnswer) -> str:
    """For a person at a terminal (`remembrancer search`): every result numbered with its score,
    the best one in full."""
    lines = [freshness_line(out.index)]   # the MCP tool's wording: one spelling of the header
    if out.conversations_index is not None:
        lines.append("conversations: " + freshness_line(out.conversations_index))
    if out.commits_index is not None:
        lines.append("commits: " + freshness_line(out.commits_index))
    for n in out.notes or []:
        lines.append(f"note: {n}")
    if out.found_by and out.found_by != out.query:
        lines.append(f"best result found by the rephrasing {elide(out.found_by)!r}")
    results = out.results
    if out.no_strong_match and out.best_weak:
        why = "; ".join(out.why_no_strong_match or [])
        results = out.best_weak
        lines.append(f"No strong match{' (' + why + ')' if why else ''}. Weak candidates (may not answer the question):")
    elif not results:
        lines.append(f"No strong match: {_empty_why(out)}")
        return "\n".join(lines)
    for i, r in enumerate(results):
        loc = f"{one_line(r.path)}:{r.lines[0]}-{r.lines[1]}"
        flags = " [stale]" if r.stale else ""
        lines.append(f"\n{i + 1}. {_head(r.heading)}{flags}\n   {loc}  {r.type}  {r.date or ''}  "
                     f"{_weak_score(r) if out.no_strong_match else f'score {r.score:.3f}'} ({r.provenance})  "
                     f"~{r.tokens} tokens")
        if r.session_id:
            lines.append(f"   session {r.session_id}  uuid {r.uuid or '?'}  {r.timestamp or ''}"
                         + (f"  branch {r.branch}" if r.branch else "") + (f"  ({r.corpus})" if r.corpus else ""))
        elif r.commit:
            lines.append(f"   commit {r.commit}  by {r.author or '?'}" + (f"  ({r.corpus})" if r.corpus else ""))
        elif r.corpus:
            lines.append(f"   ({r.corpus})")
        if i == 0 and r.content is not None and not out.no_strong_match:
            lines.append("   " + (_cut_from(r) + r.content).replace("\n", "\n   "))
            if r.commits:
                lines.append("   " + commits_text(r))
        else:
            lines.append(f"   {r.snippet}")
        if r.also:
            lines.append("   also in this document: " + also_text(r.also))
        lines += [f"   why: {w}" for w in r.why or []]
    if out.truncated:
        lines.append("\nMore sections match the filters (newest first): raise --limit, or narrow the filters.")
    lines += [f"(left out: {one_line(note)})" for note in out.left_out or []]
    return "\n".join(lines)


def _weak_score(r) -> str:
    """A weak candidate's own similarity to the question, not its score: scores are relative to the
    other results, and a 0.78 beside "no strong match" reads as a good one."""
    if r.scores is None or r.scores.dense is None:
        return "weak"
    return f"similarity {r.scores.dense:.2f}" + (f", keyword {r.scores.bm25:.1f}" if r.scores.bm25 else "")


def read_text(out: Page) -> str:
    where = one_line(out.path)
    if out.heading is not None:
        where += f" § {out.heading or '(preamble)'}"
    if out.lines:
        where += f" ({_loc(out.lines)})"
    head = f"{where} — {out.type or '?'}{', ' + out.date if out.date else ''}; " \
           f"chars {out.offset}-{out.offset + out.returned_chars} of {out.total_chars}"
    text = f"{freshness_line(out.index)}\n{head}\n\n{out.content}"
    if out.truncated:
        rest = out.total_chars - out.offset - out.returned_chars
        text += f"\n\n[… {rest} more chars: continue with offset={out.next_offset}]"
    return text


def outline_text(out: Outline) -> str:
    lines = [freshness_line(out.index), f"{one_line(out.path)} — {out.type or '?'}, {out.date or 'undated'}, "
             f"~{out.total_tokens} tokens, {len(out.sections)} sections"]
    for s in out.sections:
        indent = "  " * max(s.level - 1, 0)
        name = s.heading.split(" > ")[-1] if s.heading else "(preamble)"
        lines.append(f"{indent}- {name} [lines {s.lines[0]}-{s.lines[1]}, ~{s.tokens} tokens]")
    lines.append("Open a section with read(path, heading=<its name or breadcrumb>).")
    return "\n".join(lines)


def list_text(out: DocumentList) -> str:
    lines = [freshness_line(out.index)]
    lines += [f"{one_line(d.path)} — {d.type}, {d.date or 'undated'}, {d.sections} sections, ~{d.tokens} tokens"
              + (f": {d.title}" if d.title else "") for d in out.documents]
    n, start = len(out.documents), out.offset or 0
    if out.truncated:
        lines.append(f"(documents {start + 1}-{start + n} of {out.total}; the next page: "
                     f"offset={out.next_offset}, or narrow with path= or type=)")
    elif start:
        lines.append(f"(documents {start + 1}-{start + n} of {out.total})" if n else
                     f"(offset={start} is past the last of {out.total} documents)")
    else:
        lines.append(f"{out.total} documents" + (f": {out.message}" if out.message else ""))
    return "\n".join(lines)


def list_terminal_text(out: DocumentList) -> str:
    """For a person at a terminal (`remembrancer list`): one document a line, then the count (and
    why it is 0, when filters matched nothing), after the freshness line."""
    return "\n".join([freshness_line(out.index), *(f"{one_line(d.path)}  {d.type}  {d.date or ''}  {d.sections} sections  ~{d.tokens} tokens"
                         for d in out.documents), f"{out.total} documents" + (f": {out.message}" if out.message else "")])


def status_text(out: StatusAnswer) -> str:
    lines = [freshness_line(out.freshness)]
    d = out.daemon
    if d:
        lines.append(f"Daemon: pid {d.pid} on {d.socket}; {d.clients} clients, {d.requests} requests, "
                     f"model loaded {d.model_loads}x, {d.queued_changes} changes queued"
                     + (f"; build {d.build.get('fingerprint')}" if d.build else "")
                     + (f"; last error: {d.last_error}" if d.last_error else ""))
    else:
        lines.append("Daemon: none — answered by the engine inside the MCP server (read-only).")
    st = out.index
    for r in st.roots if st else []:
        head = ""
        if r.head_current:
            same = r.head_indexed == r.head_current
            head = f", HEAD {r.head_current[:10]} ({'indexed' if same else 'not indexed yet'})"
        gone = f" — UNAVAILABLE: it {r.unavailable}" if r.unavailable else ""
        lines.append(f"Root {one_line(r.name)}: {one_line(shown_root(r.path))}{head}{gone}")
    when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.last_indexed_at))
            if st and st.last_indexed_at else "never")
    counts = (st.documents, st.sections, st.vectors, st.generation) if st else ("?",) * 4
    lines.append(f"{counts[0]} documents, {counts[1]} sections, {counts[2]} vectors; generation {counts[3]}; "
                 f"last indexed {when}")
    m = st.model if st else None
    lines.append(f"Model: {m['name']} ({m['dim']} dims)" if m else "Model: none yet")
    if st and st.vectors_waiting:
        lines.append(f"Waiting: {st.vectors_waiting} passage texts have no vector yet (found by keywords only "
                     "until an index run embeds them)")
    for w in (st.warnings if st else []):
        lines.append(f"Warning: {one_line(w)}")
    for c in out.corpora or []:   # the other corpora of the session (its conversations, say)
        if st is None or c.index_dir != st.index_dir:
            lines += [f"Warning ({one_line(', '.join(c.roots))}): {one_line(w)}" for w in c.warnings or []]
    return "\n".join(lines)


def error_text(err: dict) -> str:
    return json.dumps({"error": err}, ensure_ascii=False)


# -- memory tools (indexer/memory/tools.py) --------------------------------------------------------------

def _commit_bits(r: MemoryRow) -> list[str]:
    out = []
    for c in r.verified_commits or []:
        where = f"landed on {c.default_branch or 'the default branch'}" if c.landed else \
            f"exists but NOT on {c.default_branch or 'the default branch'}"
        out.append(f"{c.cited_as}: {where} — {c.subject or ''} ({(c.date or '')[:10]})")
    for c in r.unverified_commits or []:
        out.append(f"{c.cited_as}: {(c.verdict or '').upper()} — {c.reason or ''}")
    return out


def _dated_row(i: int, r: MemoryRow, extra: str = "") -> str:
    head = (f"{i}. {r.date or 'undated'}  {one_line(r.path)} § {_head(r.heading)} — "
            f"{_loc(r.lines)}, {r.type or '?'}")
    if r.record:
        head += ", the entity's record"
    if r.dated_by in ("commit", "modified"):
        head += f" (dated by the file's last {'commit' if r.dated_by == 'commit' else 'modification'})"
    if r.stale:
        head += ", marked stale/superseded"
    head += extra
    lines = [head]
    if r.snippet:
        lines.append(f"   {r.snippet}")
    for c in _commit_bits(r):
        lines.append(f"   commit {c}")
    return "\n".join(lines)


def history_text(out: HistoryAnswer) -> str:
    ent = out.entity
    parts = [freshness_line(out.index)]
    names = ", ".join(ent.aliases or [])
    scope = []
    if out.topic:
        scope.append(f"about {out.topic!r}")
    if out.since or out.until:
        scope.append(f"from {out.since or 'the start'} to {out.until or 'now'}")
    parts.append(f"History of {ent.name}" + (f" (also {names})" if names else "")
                 + (" " + " ".join(scope) if scope else "")
                 + f": {out.total} sections, newest first by date (not by relevance). "
                 f"Record: {', '.join(ent.records or []) or 'none'}.")
    for n in out.notes or []:
        parts.append(f"Note: {n}")
    rows = out.results
    if not rows:
        parts.append((out.message or "Nothing found.") + " Not proof of absence: try search.")
    else:
        parts.append("\n".join(_dated_row(i, r) for i, r in enumerate(rows, 1)))
        if out.truncated:
            parts.append(f"{out.total - len(rows)} older sections not shown: raise limit, or narrow with "
                         "since/until/topic.")
        parts.append("Open one with read(path, heading).")
    return "\n\n".join(parts)


def latest_text(out: LatestAnswer) -> str:
    parts = [freshness_line(out.index)]
    terms = ", ".join(repr(t) for t in out.terms)
    scope = f" (filters: {out.filters})" if out.filters else ""
    rows = out.results
    if out.message:
        parts.append(out.message + ".")
    if rows:
        parts.append(f"Sections containing {'most' if out.relaxed else 'all'} of {terms}{scope}: "
                     f"{out.total}, newest first (a filter, not a ranking).")
        parts.append("\n".join(_dated_row(i, r, f"; missing {', '.join(map(repr, r.missing_terms))}"
                                          if r.missing_terms else "") for i, r in enumerate(rows, 1)))
        if out.truncated:
            parts.append(f"{out.total - len(rows)} older sections not shown: raise limit or add since/type.")
        parts.append("Each is a commit: `git show <commit>` shows its diff." if all(r.type == COMMIT_TYPE for r in rows)
                     else "Open one with read(path, heading).")
    else:
        parts.append("An exact-term miss is not proof of absence: try search for the meaning.")
    return "\n\n".join(parts)


def neighbors_text(out: NeighborsAnswer) -> str:
    parts = [freshness_line(out.index), f"Links of {one_line(out.path)} ({out.type}: {out.title})"]
    parts.append("Links out:\n" + ("\n".join(
        f"- line {x.line}: {one_line(x.path)}" + (f" § {x.anchor}" + ("" if x.anchor_found is not False else
                                                          " (no such heading!)") if x.anchor else "")
        + (f" ({x.text})" if x.text else "") for x in out.outbound) or "- none"))
    parts.append("Linked from (backlinks):\n" + ("\n".join(
        f"- {one_line(x.source)} § {x.heading or '(preamble)'}, line {x.line}"
        + (f" → § {x.anchor}" if x.anchor else "") for x in out.inbound) or "- none"))
    if out.unresolved:
        parts.append("Unresolved (broken) links:\n" + "\n".join(
            f"- line {x.line}: {x.target}" + (f" — did you mean {', '.join(x.suggestions)}?"
                                              if x.suggestions else "") for x in out.unresolved))
    if out.similar:
        parts.append("Close in meaning but not linked either way:\n" + "\n".join(
            f"- {one_line(x.path)} § {_head(x.heading)} (similarity {x.similarity:.2f}, {x.date or 'undated'})"
            for x in out.similar))
    for n in out.notes or []:
        parts.append(f"Note: {n}")
    return "\n\n".join(parts)


def verify_text(out: VerifyAnswer) -> str:
    src = out.source
    where = (one_line(src.path) if src.path else "the given text") + (f" § {src.heading}" if src.heading else "")
    parts = [freshness_line(out.index)]
    parts.append(f"Commits cited in {where}, checked in: "
                 + (", ".join(r.repo + ("" if r.readable else " (UNREADABLE)") for r in out.repos) or "no repository"))
    if not out.commits:
        parts.append(out.message or "No commit SHA found.")
    for c in out.commits:
        exists = {True: "exists", False: "does not exist", None: "cannot be checked"}[c.exists]
        landed = {True: "landed", False: "NOT landed", None: "landed: unknown"}[c.landed]
        line = f"- {c.cited_as} (line {', '.join(map(str, c.lines or []))}): {(c.verdict or '').upper()} — {exists}"
        if c.exists:
            line += f", {landed} on {c.default_branch or 'the default branch'}"
            line += f"\n  {c.repo} {(c.commit or '')[:12]} {(c.date or '')[:19]} {c.subject or ''}"
            if c.files:
                more = f" (+{c.files_total - len(c.files)} more)" if c.files_total else ""
                line += f"\n  files: {', '.join(map(one_line, c.files))}{more}"
        if c.reason:
            line += f"\n  {c.reason}"
        parts.append(line)
    return "\n\n".join(parts)
