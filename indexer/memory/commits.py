"""Did that commit really land? Commit-SHA-shaped tokens checked against git repositories (pygit2).

A token is 7–40 lower-case hex digits with at least one digit and one letter (so neither
`20300210` nor `defaced` counts), optionally qualified by a repository name: `app@4f2a9c1`.
Each one is looked up in the corpus repositories and in `[verify] repos`; two answers are kept
apart:

- **exists** — the object is a commit in a repository that could be read (True), it is in none
  of the readable ones (False), or the question cannot be answered (None: a repository could not
  be read, the named repository is not configured, there is no repository at all);
- **landed** — the commit is reachable from the repository's default branch.

Hex that is an object but not a commit (a blob, a tree) says so. A repository that cannot be
read makes the answer UNKNOWN — never "absent".

Under a scope (indexer/store/scope.py) a corpus repository has the history of the scoped paths only —
what `git filter-repo --path journal/` would leave, under the original commit ids: a commit that
changed no scoped path (compared with its first parent) does not exist, a commit's files are its
scoped files, HEAD is the newest commit that changed the scope. Objects that are not commits are
not judged under a scope (absent). `[verify] repos` are not corpus files and are never scoped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from remembrancer.indexer.ingest.corpus import discover_repo

SHA_RE = re.compile(r"(?<![0-9A-Za-z_-])(?:([A-Za-z][\w.-]{0,60})@)?([0-9a-f]{7,40})(?![0-9A-Za-z_-])")
MAX_FILES = 20
MAX_BRANCHES = 5
REPLACED_SCAN = 2000   # commits of the default branch searched for an amended/rebased twin

VERDICTS = ("landed", "not_landed", "not_a_commit", "absent", "ambiguous", "unknown")


def is_sha_like(token: str) -> bool:
    return (7 <= len(token) <= 40 and all(c in "0123456789abcdef" for c in token)
            and any(c.isdigit() for c in token) and any(c.isalpha() for c in token))


@dataclass
class Citation:
    sha: str
    repo: str | None    # the `name@` qualifier, if any
    line: int
    cited_as: str


def find_shas(text: str, first_line: int = 1) -> list[Citation]:
    """Every SHA-shaped token of `text`, with its line number (1-based from `first_line`)."""
    out = []
    for i, line in enumerate(text.split("\n")):
        for m in SHA_RE.finditer(line):
            sha = m.group(2)
            if is_sha_like(sha):
                out.append(Citation(sha, m.group(1), first_line + i, m.group(0)))
    return out


@dataclass
class _Repo:
    name: str
    path: Path
    repo: object = None
    error: str | None = None
    _default: tuple | None = None
    _twins: dict | None = None
    extra: dict = field(default_factory=dict)
    scope: list[str] | None = None   # repository paths a scoped request sees (None: all of it)


def _iso(ts: int, offset_min: int) -> str:
    return datetime.fromtimestamp(ts, timezone(timedelta(minutes=offset_min))).isoformat()


class CommitChecker:
    """Checks SHAs against a fixed set of repositories; opened once, answers cached."""

    def __init__(self, corpus_roots: list[Path], extra_repos: list[Path] = (), scopes: list | None = None):
        """`scopes[i]`: the repository paths corpus root i's scope sees (None: all; see scope.repo_paths)."""
        from remembrancer.indexer.ingest import corpus

        self.repos: list[_Repo] = []
        seen: dict[str, _Repo] = {}
        for i, p in enumerate(corpus_roots):
            repo = corpus.open_repo(Path(p))
            if repo is None:
                continue  # a plain folder: nothing to check against, not an unreadable repo
            key = str(Path(repo.workdir or repo.path).resolve())
            sees = scopes[i](repo.workdir) if scopes is not None else None
            if key in seen:   # two roots in one repository: either one's scope
                r = seen[key]
                r.scope = None if r.scope is None or sees is None else r.scope + sees
                continue
            seen[key] = r = _Repo(Path(key).name, Path(key), repo, scope=sees)
            self.repos.append(r)
        for p in extra_repos:
            p = Path(p).expanduser()
            key = str(p.resolve()) if p.exists() else str(p)
            if key in seen:
                continue
            seen[key] = r = self._open(p)
            self.repos.append(r)
        names: dict[str, int] = {}
        for r in self.repos:  # two repos called "app": the second is "app-2"
            n = names.get(r.name, 0) + 1
            names[r.name] = n
            if n > 1:
                r.name = f"{r.name}-{n}"
        self._cache: dict[tuple[str, str | None], dict] = {}

    @staticmethod
    def _open(path: Path) -> _Repo:
        name = path.name if path.name not in (".git", "") else path.parent.name
        if not path.exists():
            return _Repo(name, path, None, f"{path} does not exist")
        try:
            repo = discover_repo(path)   # not pygit2.discover_repository: it leaks None (corpus.py)
            if repo is None:
                return _Repo(name, path, None, f"{path} is not a git repository")
            return _Repo(name, path, repo)
        except Exception as e:  # permissions, corruption, odd formats: all make the answer UNKNOWN
            return _Repo(name, path, None, f"{path} cannot be read: {type(e).__name__}: {e}")

    def describe(self) -> list[dict]:
        return [{"repo": r.name, "path": str(r.path), "readable": r.repo is not None,
                 **({"reason": r.error} if r.error else {})} for r in self.repos]

    # -- one SHA -----------------------------------------------------------------------------------
    def check(self, sha: str, repo_name: str | None = None) -> dict:
        key = (sha, repo_name.casefold() if repo_name else None)
        if key not in self._cache:
            self._cache[key] = self._check(sha, repo_name)
        return dict(self._cache[key])

    def _check(self, sha: str, repo_name: str | None) -> dict:
        repos = self.repos
        if repo_name:
            repos = [r for r in self.repos if r.name.casefold() == repo_name.casefold()]
            if not repos:
                known = ", ".join(r.name for r in self.repos) or "none"
                return {"verdict": "unknown", "exists": None, "landed": None,
                        "reason": f"repository {repo_name!r} is not among the checked repositories ({known}); "
                                  "add it to [verify] repos in the config"}
        if not repos:
            return {"verdict": "unknown", "exists": None, "landed": None,
                    "reason": "no git repository to check against (the corpus is a plain folder and "
                              "[verify] repos is empty)"}
        found: list[dict] = []
        other: list[dict] = []
        unknown: list[str] = []
        checked: list[str] = []
        for r in repos:
            if r.repo is None:
                unknown.append(f"{r.name}: {r.error}")
                continue
            try:
                res = self._in_repo(r, sha)
            except Exception as e:  # a repository that fails mid-read: UNKNOWN, never "absent"
                unknown.append(f"{r.name}: cannot be read ({type(e).__name__}: {e})")
                continue
            checked.append(r.name)
            if res is None:
                continue
            (found if res["verdict"] in ("landed", "not_landed") else other).append(res)
        if found:
            best = sorted(found, key=lambda x: x["verdict"] != "landed")[0]
            if len(found) > 1:
                best["also_in"] = [f["repo"] for f in found if f is not best]
            return best
        if other:
            return other[0]
        if unknown:
            return {"verdict": "unknown", "exists": None, "landed": None, "checked": checked,
                    "reason": "not found in " + (", ".join(checked) if checked else "any readable repository")
                              + "; could not read " + "; ".join(unknown)}
        return {"verdict": "absent", "exists": False, "landed": None, "checked": checked,
                "reason": f"no commit {sha} in {', '.join(checked)}"}

    def _in_repo(self, r: _Repo, sha: str) -> dict | None:
        import pygit2

        repo = r.repo
        try:
            obj = repo.get(sha)
        except (ValueError, KeyError) as e:
            if "ambiguous" in str(e).lower():
                return {"verdict": "ambiguous", "exists": None, "landed": None, "repo": r.name,
                        "reason": f"{sha} matches several objects in {r.name}; cite more digits"}
            return None
        if obj is None:
            return None
        if obj.type_str == "tag":
            obj = obj.peel(pygit2.Commit)
        if r.scope is not None and (obj.type_str != "commit" or not touches(obj, r.scope)):
            return None   # not in the scope's history
        if obj.type_str != "commit":
            return {"verdict": "not_a_commit", "exists": False, "landed": None, "repo": r.name,
                    "object": obj.type_str, "reason": f"{sha} is a {obj.type_str} in {r.name}, not a commit"}
        branch, tip = self._default_branch(r)
        oid = obj.id
        landed = None if tip is None else (oid == tip or repo.descendant_of(tip, oid))
        out = {
            "verdict": "landed" if landed else "not_landed", "exists": True, "landed": landed,
            "repo": r.name, "commit": str(oid), "default_branch": branch,
            "date": _iso(obj.commit_time, obj.commit_time_offset),
            "subject": (obj.message or "").strip().split("\n", 1)[0],
        }
        files, total = self._files(repo, obj, r.scope)
        out["files"] = files
        if total > len(files):
            out["files_total"] = total
        if not landed:
            out["branches"] = self._branches_containing(repo, oid)
            twin = self._twin(r, obj)
            if twin:
                out["replaced_by"] = twin
            where = f"on {', '.join(out['branches'])}" if out["branches"] else "on no branch"
            out["reason"] = (f"exists in {r.name} but is not on {branch or 'a default branch'} ({where})"
                             + (f"; {branch} has {twin['commit'][:12]} by the same author at the same author time — "
                                "probably amended or rebased" if twin else ""))
        return out

    @staticmethod
    def _files(repo, commit, scope: list[str] | None = None) -> tuple[list[str], int]:
        try:
            if commit.parents:
                diff = repo.diff(commit.parents[0], commit)
            else:
                diff = commit.tree.diff_to_tree(swap=True)
            paths = [d.delta.new_file.path for d in diff]
        except Exception:
            return [], 0
        if scope is not None:
            paths = [p for p in paths if any(p == s or p.startswith(s + "/") for s in scope)]
        return paths[:MAX_FILES], len(paths)

    def _default_branch(self, r: _Repo) -> tuple[str | None, object]:
        if r._default is not None:
            return r._default
        repo = r.repo
        name, tip = None, None
        try:
            ref = repo.references.get("refs/remotes/origin/HEAD")
            if ref is not None:
                target = ref.resolve()
                name, tip = target.shorthand, target.target
            if tip is None:
                for cand in ("main", "master", "trunk"):
                    b = repo.branches.local.get(cand)
                    if b is not None:
                        name, tip = cand, b.target
                        break
            if tip is None and not repo.head_is_unborn and not repo.head_is_detached:
                name, tip = repo.head.shorthand, repo.head.target
        except Exception:
            name, tip = None, None
        r._default = (name, tip)
        return r._default

    @staticmethod
    def _branches_containing(repo, oid) -> list[str]:
        out = []
        for name in sorted(repo.branches.local):
            try:
                tip = repo.branches.local[name].target
                if tip == oid or repo.descendant_of(tip, oid):
                    out.append(name)
            except Exception:
                continue
            if len(out) >= MAX_BRANCHES:
                break
        return out

    def _twin(self, r: _Repo, commit) -> dict | None:
        """A commit on the default branch with the same author, author time and subject: what an
        amend or a rebase leaves behind."""
        import pygit2

        _, tip = self._default_branch(r)
        if tip is None:
            return None
        if r._twins is None:
            r._twins = {}
            try:
                for i, c in enumerate(r.repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)):
                    if i >= REPLACED_SCAN:
                        break
                    if r.scope is None or touches(c, r.scope):
                        r._twins.setdefault((c.author.email, c.author.time), c)
            except Exception:
                pass
        twin = r._twins.get((commit.author.email, commit.author.time))
        if twin is None or twin.id == commit.id:
            return None
        return {"commit": str(twin.id), "subject": (twin.message or "").strip().split("\n", 1)[0],
                "date": _iso(twin.commit_time, twin.commit_time_offset)}


def checker_for(config, prefixes: tuple[str, ...] = ()) -> CommitChecker:
    """The checker for a corpus; with scope `prefixes`, its repositories hold the scope's history only."""
    scopes = None
    if prefixes:
        from remembrancer.indexer.store.scope import repo_paths

        multi = len(config.roots) > 1
        scopes = [lambda wd, r=r: repo_paths(r, wd, prefixes, multi) for r in config.roots]
    return CommitChecker([r.path for r in config.roots], list(getattr(config, "verify_repos", []) or []), scopes)


def _entry(tree, path: str):
    try:
        return tree[path].id
    except KeyError:
        return None


def touches(commit, paths: list[str]) -> bool:
    """Whether `commit` changed any of `paths` (folders or files) against its first parent."""
    parent = commit.parents[0].tree if commit.parents else None
    for p in paths:
        mine = _entry(commit.tree, p)
        if mine != (_entry(parent, p) if parent is not None else None):
            return True
    return False


HEAD_SCAN = 10_000   # first-parent steps searched for the newest commit that changed a scope
_heads: dict[tuple, str | None] = {}


def scoped_head(root, prefixes: tuple[str, ...], multi: bool, head: str) -> str | None:
    """The scope's HEAD: the newest first-parent ancestor of `head` (itself included) that changed
    a scoped path — what HEAD is in a history holding only the scoped files."""
    from remembrancer.indexer.ingest import corpus
    from remembrancer.indexer.store.scope import repo_paths

    key = (str(root.path), prefixes, multi, head)
    if key in _heads:
        return _heads[key]
    repo = corpus.open_repo(Path(root.path))
    found = None
    if repo is not None:
        paths = repo_paths(root, repo.workdir, prefixes, multi)
        try:
            commit = repo.get(head)
            for _ in range(HEAD_SCAN):
                if commit is None or paths == []:
                    break
                if paths is None or touches(commit, paths):
                    found = str(commit.id)
                    break
                commit = commit.parents[0] if commit.parents else None
        except Exception:   # an unreadable history: no head to report, never a failure
            found = None
    if len(_heads) > 256:
        _heads.clear()
    _heads[key] = found
    return found


def check_citations(checker: CommitChecker, cites: list[Citation]) -> list[dict]:
    """One entry per distinct (repo, sha) with every line it is cited on."""
    merged: dict[tuple, dict] = {}
    for c in cites:
        key = (c.repo.casefold() if c.repo else None, c.sha)
        if key in merged:
            merged[key]["lines"].append(c.line)
            continue
        merged[key] = {"sha": c.sha, "cited_as": c.cited_as, "lines": [c.line], **checker.check(c.sha, c.repo)}
    return list(merged.values())


def split_verified(results: list[dict]) -> tuple[list[dict], list[dict]]:
    """(verified: the commit exists — with `landed` —, unverified: absent / not a commit / unknown)."""
    keep = ("sha", "cited_as", "repo", "commit", "landed", "default_branch", "date", "subject")
    verified = [{k: r[k] for k in keep if k in r} for r in results if r.get("exists") is True]
    unverified = [{k: r[k] for k in ("sha", "cited_as", "verdict", "reason") if k in r}
                  for r in results if r.get("exists") is not True]
    return verified, unverified
