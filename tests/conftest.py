import pytest

from indexer.embed import load_embedder_from_dir
from tests.tiny_model import build_tiny_model


def pytest_configure(config):
    config.addinivalue_line("markers", "real_model: loads the packaged default embedding model (slower, still runs in CI)")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny deterministic BERT-like model directory (see tests/tiny_model.py)."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tiny_embedder(tiny_model_dir):
    return load_embedder_from_dir(tiny_model_dir)


@pytest.fixture
def notes(tmp_path):
    """A private copy of the sample corpus (examples/notes) that a test may edit."""
    import shutil

    from tests.corpus_helpers import EXAMPLES

    root = tmp_path / "notes"
    shutil.copytree(EXAMPLES, root)
    return root
