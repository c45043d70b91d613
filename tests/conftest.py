import os

import pytest

from remembrancer.indexer.models.embed import load_embedder_from_dir
from tests.support.tiny_model import build_tiny_model


@pytest.fixture(scope="session", autouse=True)
def no_claude_code_folders(tmp_path_factory):
    """Claude Code's transcript folders are found by themselves (indexer/config.py claude_folders):
    every test, and every process a test starts, looks in an empty folder of its own instead of
    this machine's ~/.claude, unless the test points elsewhere."""
    os.environ["CLAUDE_CONFIG_DIR"] = str(tmp_path_factory.mktemp("claude-config"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny deterministic BERT-like model directory (see tests/support/tiny_model.py)."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tiny_embedder(tiny_model_dir):
    return load_embedder_from_dir(tiny_model_dir)


@pytest.fixture
def notes(tmp_path):
    """A private copy of the sample corpus (examples/notes) that a test may edit."""
    import shutil

    from tests.support.paths import EXAMPLES

    root = tmp_path / "notes"
    shutil.copytree(EXAMPLES, root)
    return root


@pytest.fixture
def data_env(tmp_path, monkeypatch):
    """Index data under this test's tmp dir (never the user's)."""
    monkeypatch.setenv("REMEMBRANCER_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture
def notes_engine(notes, data_env, tiny_embedder):
    """An engine over the private sample-corpus copy, indexed with the tiny model."""
    from tests.support.corpus import engine_for

    e = engine_for([notes], tiny_embedder)
    e.refresh()
    yield e
    e.close()


@pytest.fixture
def tiny_engine(data_env, tiny_embedder):
    """Build, index and (at teardown) close an engine over the given roots with the tiny model."""
    from tests.support.corpus import engine_for

    made = []

    def make(*roots):
        e = engine_for(list(roots), tiny_embedder)
        e.refresh()
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


@pytest.fixture
def engine_of(data_env, tiny_embedder):
    """Open an engine over a Config (any corpus kind) with the tiny model; each closed at teardown."""
    from remembrancer.indexer.engine import Engine

    made = []

    def make(cfg):
        e = Engine(cfg, embedder=tiny_embedder)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


_PG_SERVED: list[str] = []   # the server the team tests ran on (or why they were skipped), for the summary


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """A real PostgreSQL + pgvector (pgserver: 16 + 0.6; `make test-pg-latest`: 18 + 0.8),
    stopped at the end of the session."""
    from tests.support.pg import distance_crash, server, versions

    srv = server(tmp_path_factory.mktemp("pg"))
    served = versions(srv.get_uri())
    # A second, optional server (`make test-pg-latest`) may bring a pgvector binary this CPU cannot
    # run: its tests are skipped, saying why. The main server's are never skipped this way.
    crash = distance_crash(srv.get_uri()) if os.environ.get("REMEMBRANCER_PG_OPTIONAL") else None
    if crash:
        srv.cleanup()
        _PG_SERVED.append(f"were skipped: {served}: {crash}")
        pytest.skip(f"{served}: {crash}")
    _PG_SERVED.append(f"ran on {served}")
    yield srv
    srv.cleanup()


def pytest_terminal_summary(terminalreporter):
    for served in _PG_SERVED:
        terminalreporter.write_line(f"team store tests {served}")


@pytest.fixture
def pg_url(pg_server):
    """The URL of an empty database of its own on the session's server."""
    from tests.support.pg import fresh_database

    return fresh_database(pg_server.get_uri())
