"""Reader roles of the team store: who may read it, and which path prefixes, enforced by
PostgreSQL's row-level security (migrations 7 and 15 in schema.py), not by the reader's own process.

`remembrancer team grant-reader ROLE --scope journal/ --store URL` (run with the writer's role,
which owns the tables and may create roles) makes ROLE a login in this store's scoped group with
those prefixes; `--all` makes it a reader of the whole store; `revoke-reader` takes prefixes (or
everything) away. The groups are this store's own (schema.store_roles): a login's access to
another store on the same server is never changed here. A reader connecting as a scoped ROLE is
served as a corpus holding only those files would be — the database hides every other row, and
the reader's engine applies the same scope so counts, statistics, links and history match.
"""

from __future__ import annotations

from remembrancer.indexer.store import scope as scope_mod
from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.postgres import connect as pg_connect
from remembrancer.indexer.store.postgres import schema as pg_schema
from remembrancer.indexer.store.postgres.schema import READER_ROLE, SCOPED_ROLE
from remembrancer.indexer.store.postgres.store import PgStore


def _connect(url: str):
    PgStore(url, readonly=False)   # the schema is current (migrations applied) before roles are touched
    return pg_connect.connect(url, reader=False, autocommit=True)   # DDL may wait for the writer: no deadline


def _own_roles(conn) -> tuple[str, str]:
    """This store's (reader, scoped reader) group roles, with their policies and grants made
    first where missing (schema.ensure_reader_access: the writer's role needs CREATEROLE)."""
    problem = pg_schema.ensure_reader_access(conn)
    if problem:
        raise UserError(f"this store's readers cannot be served: {problem}", param="store",
                        hint="as a superuser: ALTER ROLE <writer> CREATEROLE; then run this again")
    return pg_schema.store_roles(conn.execute("SELECT current_database()").fetchone()[0])


def _check_role_name(role: str, own: tuple[str, str]) -> str:
    if not role or len(role) > 63 or any(ord(c) < 32 for c in role) or role.startswith("pg_"):
        raise UserError(f"not a usable role name: {role!r}", param="role",
                        hint="a PostgreSQL role name of 1-63 characters, not starting with pg_")
    if role in (READER_ROLE, SCOPED_ROLE, *own):
        raise UserError(f"{role} is a group role of the store, not a reader", param="role")
    return role


def _member(conn, role: str, group: str) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s)"
                        " AND pg_has_role(%s, %s, 'MEMBER')", (role, role, group)).fetchone()[0]


def grant_reader(url: str, role: str, scopes: list[str], password: str | None = None, everything: bool = False) -> dict:
    """Create (or update) login `role` as a reader of this store only: of `scopes` (added to
    what it had), or with `everything` of the whole store. The roles are this store's own: the
    login's access to other stores on the server is untouched."""
    from psycopg import errors, sql

    prefixes = scope_mod.normalize(scopes)
    if everything == bool(prefixes):
        raise UserError("grant-reader needs --scope PREFIX (repeatable) or --all, not both" if everything else
                        "grant-reader needs at least one --scope, or --all", param="scope",
                        hint="e.g. --scope journal/ (reads that folder only), or --all (reads the whole store)")
    with _connect(url) as conn:
        reader, scoped = _own_roles(conn)
        role = _check_role_name(role, (reader, scoped))
        ident = sql.Identifier(role)
        row = conn.execute("SELECT rolsuper, rolbypassrls, rolname = current_user FROM pg_roles WHERE rolname = %s",
                           (role,)).fetchone()
        if row is not None and any(row):
            raise UserError(f"{role} bypasses row-level security (a superuser, BYPASSRLS, or the writer's own role):"
                            " it cannot be made a reader", param="role", hint="grant it to a separate login role")
        owns = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner = %s",
                            (role,)).fetchone()[0]
        if owns:
            raise UserError(f"{role} owns tables of the store: owners are exempt from row-level security",
                            param="role", hint="grant it to a separate login role")
        try:
            with conn.transaction():
                if row is None:
                    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
                if password is not None:   # its SCRAM verifier, made here: the password never reaches the server
                    conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(ident, sql.Literal(_verifier(conn, role, password))))
                # the unscoped reader's policy lets every row through: the two groups are exclusive
                leave, join = (scoped, reader) if everything else (reader, scoped)
                if _member(conn, role, leave):
                    conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(leave), ident))
                conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(join), ident))
                if everything:
                    conn.execute("DELETE FROM scope_roles WHERE role = %s", (role,))   # cascades to its grants
                else:
                    conn.execute("INSERT INTO scope_roles(role) VALUES (%s) ON CONFLICT DO NOTHING", (role,))
                    conn.execute("INSERT INTO scope_grants(role, prefix) SELECT %s, unnest(%s::text[])"
                                 " ON CONFLICT DO NOTHING", (role, list(prefixes)))
                    if _member(conn, role, reader):
                        raise UserError(f"{role} is still a member of {reader} through another role: it would see"
                                        " every row", param="role", hint="revoke that membership, or use a separate login role")
        except errors.InsufficientPrivilege as e:
            raise UserError(f"the store refused to change role {role}: {str(e).strip()}", param="store",
                            hint="run grant-reader with the writer's role, which needs CREATEROLE") from None
        return _describe(conn, role, reader)


def _verifier(conn, role: str, password: str) -> str:
    """The SCRAM-SHA-256 verifier of `password` for `role`, computed by libpq on this machine (as
    psql's \\password does): a server logging DDL (`log_statement = 'ddl'`) logs the verifier,
    from which the password cannot be recovered, instead of the password."""
    return conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256").decode()


def revoke_reader(url: str, role: str, scopes: list[str] | None = None) -> dict:
    """Take `scopes` from a scoped `role` (it stays scoped, seeing what is left, maybe nothing);
    without scopes, the role reads nothing of this store any more (other stores untouched)."""
    from psycopg import sql

    prefixes = scope_mod.normalize(scopes or [])
    with _connect(url) as conn:
        reader, scoped = _own_roles(conn)
        role = _check_role_name(role, (reader, scoped))
        is_scoped = conn.execute("SELECT 1 FROM scope_roles WHERE role = %s", (role,)).fetchone() is not None
        if not is_scoped and (prefixes or not _member(conn, role, reader)):
            raise UserError(f"{role} is not a {'scoped ' if prefixes else ''}reader of this store", param="role",
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
                for group in (reader, scoped):
                    if _member(conn, role, group):
                        conn.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(group), sql.Identifier(role)))
        return _describe(conn, role, reader)


def readers(url: str) -> list[dict]:
    """Every reader of the store: the scoped ones with their prefixes, the unscoped ones."""
    with _connect(url) as conn:
        reader, _ = _own_roles(conn)
        names = {r[0] for r in conn.execute("SELECT role FROM scope_roles")}
        # (not the writer's own role: PostgreSQL 16 makes a role's creator a member, to administer it)
        names |= {r[0] for r in conn.execute("SELECT u.rolname FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid"
                                             " JOIN pg_roles u ON u.oid = a.member WHERE g.rolname = %s"
                                             " AND u.rolname <> current_user AND NOT u.rolsuper", (reader,))}
        return [_describe(conn, name, reader) for name in sorted(names)]


def _describe(conn, role: str, reader: str) -> dict:
    scoped = conn.execute("SELECT 1 FROM scope_roles WHERE role = %s", (role,)).fetchone() is not None
    prefixes = [r[0] for r in conn.execute("SELECT prefix FROM scope_grants WHERE role = %s ORDER BY prefix", (role,))]
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is not None
    everything = not scoped and _member(conn, role, reader)
    return {"role": role, "scoped": scoped, "scope": prefixes, "reads_all": everything, "role_exists": exists}
