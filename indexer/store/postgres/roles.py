"""Scoped reader roles of the team store: who may read which path prefixes, enforced by
PostgreSQL's row-level security (migration 7 in pg_schema.py), not by the reader's own process.

`remembrancer team grant-reader ROLE --scope journal/ --store URL` (run with the writer's role,
which owns the tables and may create roles) makes ROLE a login in the scoped group with those
prefixes; `revoke-reader` takes prefixes (or everything) away. A reader connecting as ROLE is then
served as a corpus holding only those files would be — the database hides every other row, and
the reader's engine applies the same scope so counts, statistics, links and history match.
"""

from __future__ import annotations

from remembrancer.indexer.store import scope as scope_mod
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.postgres.schema import READER_ROLE, SCOPED_ROLE
from remembrancer.indexer.store.postgres.store import PgStore, _psycopg


def _connect(url: str):
    PgStore(url, readonly=False)   # the schema is current (migrations applied) before roles are touched
    return _psycopg().connect(url, autocommit=True)


def _require_scoped_group(conn) -> None:
    if not conn.execute("SELECT EXISTS (SELECT 1 FROM pg_policies WHERE policyname = 'scoped_reader'"
                        " AND tablename = 'documents')").fetchone()[0]:
        raise UserError("this store has no scoped readers (its migrations ran without CREATEROLE)", param="store",
                        hint=f"as a role with CREATEROLE: CREATE ROLE {READER_ROLE} NOLOGIN; CREATE ROLE "
                             f"{SCOPED_ROLE} NOLOGIN; then re-create the store with the writer")


def _check_role_name(role: str) -> str:
    if not role or len(role) > 63 or any(ord(c) < 32 for c in role) or role.startswith("pg_"):
        raise UserError(f"not a usable role name: {role!r}", param="role",
                        hint="a PostgreSQL role name of 1-63 characters, not starting with pg_")
    if role in (READER_ROLE, SCOPED_ROLE):
        raise UserError(f"{role} is a group role of the store, not a reader", param="role")
    return role


def grant_reader(url: str, role: str, scopes: list[str], password: str | None = None) -> dict:
    """Create (or update) login `role` as a scoped reader of `scopes` (added to what it had)."""
    from psycopg import errors, sql

    role = _check_role_name(role)
    prefixes = scope_mod.normalize(scopes)
    if not prefixes:
        raise UserError("grant-reader needs at least one --scope", param="scope",
                        hint="e.g. --scope journal/ (an unscoped reader: CREATE ROLE … IN ROLE remembrancer_reader)")
    with _connect(url) as conn:
        _require_scoped_group(conn)
        ident = sql.Identifier(role)
        row = conn.execute("SELECT rolsuper, rolbypassrls, rolname = current_user FROM pg_roles WHERE rolname = %s",
                           (role,)).fetchone()
        if row is not None and any(row):
            raise UserError(f"{role} bypasses row-level security (a superuser, BYPASSRLS, or the writer's own role):"
                            " it cannot be scoped", param="role", hint="grant the scope to a separate login role")
        owns = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner = %s",
                            (role,)).fetchone()[0]
        if owns:
            raise UserError(f"{role} owns tables of the store: owners are exempt from row-level security",
                            param="role", hint="grant the scope to a separate login role")
        try:
            with conn.transaction():
                if row is None:
                    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
                if password is not None:   # its SCRAM verifier, made here: the password never reaches the server
                    conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(ident, sql.Literal(_verifier(conn, role, password))))
                # an unscoped reader's policy would let every row through: membership is exclusive
                if conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (role, READER_ROLE)).fetchone()[0]:
                    conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(READER_ROLE), ident))
                conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(SCOPED_ROLE), ident))
                conn.execute("INSERT INTO scope_roles(role) VALUES (%s) ON CONFLICT DO NOTHING", (role,))
                conn.execute("INSERT INTO scope_grants(role, prefix) SELECT %s, unnest(%s::text[])"
                             " ON CONFLICT DO NOTHING", (role, list(prefixes)))
        except errors.InsufficientPrivilege as e:
            raise UserError(f"the store refused to change role {role}: {str(e).strip()}", param="store",
                            hint="run grant-reader with the writer's role, which needs CREATEROLE") from None
        if conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')", (role, READER_ROLE)).fetchone()[0]:
            raise UserError(f"{role} is still a member of {READER_ROLE} through another role: it would see every row",
                            param="role", hint=f"revoke that membership, or use a separate login role")
        return _describe(conn, role)


def _verifier(conn, role: str, password: str) -> str:
    """The SCRAM-SHA-256 verifier of `password` for `role`, computed by libpq on this machine (as
    psql's \\password does): a server logging DDL (`log_statement = 'ddl'`) logs the verifier,
    from which the password cannot be recovered, instead of the password."""
    return conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256").decode()


def revoke_reader(url: str, role: str, scopes: list[str] | None = None) -> dict:
    """Take `scopes` from `role` (it stays scoped, seeing what is left, maybe nothing); without
    scopes, every grant and the scoped group: the role can read nothing of the store."""
    from psycopg import sql

    role = _check_role_name(role)
    prefixes = scope_mod.normalize(scopes or [])
    with _connect(url) as conn:
        _require_scoped_group(conn)
        if not conn.execute("SELECT 1 FROM scope_roles WHERE role = %s", (role,)).fetchone():
            raise UserError(f"{role} is not a scoped reader of this store", param="role",
                            hint="`remembrancer team readers --store URL` lists them")
        with conn.transaction():
            if prefixes:
                gone = conn.execute("DELETE FROM scope_grants WHERE role = %s AND prefix = ANY(%s) RETURNING prefix",
                                    (role, list(prefixes))).fetchall()
                missing = sorted(set(prefixes) - {r[0] for r in gone})
                if missing:
                    raise UserError(f"{role} was not granted {', '.join(missing)}", param="scope",
                                    options=[r[0] for r in conn.execute(
                                        "SELECT prefix FROM scope_grants WHERE role = %s ORDER BY prefix", (role,))])
            else:
                conn.execute("DELETE FROM scope_roles WHERE role = %s", (role,))   # cascades to its grants
                if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                    conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(SCOPED_ROLE), sql.Identifier(role)))
        return _describe(conn, role)


def readers(url: str) -> list[dict]:
    """Every scoped reader of the store and its prefixes."""
    with _connect(url) as conn:
        _require_scoped_group(conn)
        return [_describe(conn, r[0]) for r in conn.execute("SELECT role FROM scope_roles ORDER BY role")]


def _describe(conn, role: str) -> dict:
    scoped = conn.execute("SELECT 1 FROM scope_roles WHERE role = %s", (role,)).fetchone() is not None
    prefixes = [r[0] for r in conn.execute("SELECT prefix FROM scope_grants WHERE role = %s ORDER BY prefix", (role,))]
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is not None
    return {"role": role, "scoped": scoped, "scope": prefixes, "role_exists": exists}


def effective_scope(granted: tuple[str, ...], requested) -> tuple[str, ...]:
    """What a scoped role's request may see: what it asked for, if that lies inside its grants;
    everything granted when it asked for nothing."""
    if not granted:
        raise UserError("this reader's role has no scope granted: it may read nothing of the store", param="store",
                        code="no_scope", hint="ask the store's admin: `remembrancer team grant-reader ROLE --scope …`")
    asked = scope_mod.normalize(requested or ())
    if not asked:
        return granted
    outside = [p for p in asked if not scope_mod.contains(granted, p)]
    if outside:
        raise UserError(f"scope {', '.join(outside)} is outside what this reader's role may read", param="scope",
                        options=list(granted), hint="ask for a scope inside the granted prefixes (or none)")
    return asked
