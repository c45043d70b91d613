"""A host's or service's nickname means its record to the notes' authors, not to the embedding
model: the dense leg reads a nickname with the record's name beside it ("the lighthouse (sbx-relay)
pods"), so a question that uses only the nickname meets the record's passages, whose header carries
the name (answer._with_entity_names)."""

from __future__ import annotations

import pytest

from remembrancer.indexer import api
from remembrancer.indexer.search import answer
from tests.support.corpus import real_model_engine, write_tree

RELAY = """---
name: sbx-relay
aliases: [relay, edge relay, lighthouse]
ips: [10.42.7.19]
---

# sbx-relay

Streams flag changes to the SDKs over server-sent events.

## Facts

| key | value |
|---|---|
| image | `ghcr.io/example/relay`, current `v1.42.3` |
| memory | request 1 GiB, limit 2 GiB, `GOMEMLIMIT=1800MiB` |
| CPU | request 1, no limit |
"""

NOTES = {
    "components/relay.md": RELAY,
    "notes/lessons.md": "# Lessons\n\n## Pods without resource requests land anywhere\n\nA Job with no memory "
                        "requests went onto a busy node and its memory use got two other pods OOM-killed. "
                        "Every namespace gets a LimitRange with default memory requests and limits for its pods.\n",
    "notes/people.md": "# People\n\n## Owners\n\nMei-Lin owns the relay while Tom is away.\n",
}
QUESTION = "How much memory are the lighthouse pods allowed?"


@pytest.fixture
def engine(tmp_path, tiny_engine):
    return tiny_engine(write_tree(tmp_path / "notes", NOTES))


@pytest.mark.parametrize("said, read", [
    ("How much memory are the lighthouse pods allowed?", "How much memory are the lighthouse (sbx-relay) pods allowed?"),
    ("what runs on 10.42.7.19?", "what runs on 10.42.7.19 (sbx-relay)?"),      # an IP is a nickname too
    ("restart the relay", "restart the relay"),                 # it shares a word with sbx-relay: it says it
    ("the edge relay's heartbeat", "the edge relay's heartbeat"),
    ("sbx-relay memory", "sbx-relay memory"),                   # the name itself
    ("lighthouses of Brittany", "lighthouses of Brittany"),     # a longer word is not the nickname
])
def test_a_nickname_is_read_with_its_records_name(engine, said, read):
    assert answer._with_entity_names(engine.view(), said) == read


def test_the_switch_leaves_the_phrasing_alone(engine, monkeypatch):
    monkeypatch.setattr(answer, "ALIAS_NAMES", False)
    assert answer._with_entity_names(engine.view(), QUESTION) == QUESTION


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    with real_model_engine(tmp_path_factory.mktemp("aliases"), NOTES) as e:
        yield e


@pytest.mark.slow
def test_a_question_using_only_a_nickname_finds_the_records_facts(real, monkeypatch):
    """With the real model: the lessons section speaks of pods and memory limits in the question's
    words and wins when the nickname is read alone; read with the record's name, the record's
    Facts — which hold the answer — come first."""
    first = api.do_search(real.view(), {"query": QUESTION, "limit": 3})["results"][0]
    assert (first["path"], first["heading"]) == ("components/relay.md", "sbx-relay > Facts")
    monkeypatch.setattr(answer, "ALIAS_NAMES", False)
    first = api.do_search(real.view(), {"query": QUESTION, "limit": 3})["results"][0]
    assert first["path"] == "notes/lessons.md"
