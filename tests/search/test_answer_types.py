"""A question asking for a value of a shape text shows — a phone number, an amount of money, an IP
address, a port — that none of the best sections writes is not answered: the notes describe the thing, not
that detail (indexer/search/answer_types.py; docs/ranking.md, "Abstention")."""

from __future__ import annotations

import pytest

from remembrancer.indexer.search import answer as search_mod, answer_types as types
from remembrancer.indexer.search.answer import SearchRequest, search
from tests.support.corpus import write_tree


@pytest.mark.parametrize("query, kind", [
    ("What's Tillpoint's after-hours support phone number?", types.PHONE),
    ("Is there a hotline for the card processor?", types.PHONE),
    ("How much do we pay per year for the weather feed?", types.MONEY),
    ("How much did the contractor invoice for the redesign?", types.MONEY),
    ("What did the renewal quote come to?", types.MONEY),
    ("What's the price of the Pro plan now?", types.MONEY),
    ("What is the minimum monthly commit, in euros?", types.MONEY),
    ("What's the IP address of the storage box?", types.IP_ADDRESS),
    ("which IP does the bastion have", types.IP_ADDRESS),
    ("What port does Sieve listen on for scoring requests?", types.PORT),
    ("objstore: which port is the S3 API on and which is the console?", types.PORT),
    # Naming the kind is not asking for a value of it.
    ("why do we rate limit per API key and not per IP address?", None),
    ("What got the pods on node ip-10-42-7-19 OOMKilled?", None),
    ("why did we change the price?", None),
    ("How much memory does analytics-1 have?", None),
    ("What's listening on port 55432 on my machine?", None),   # it names the port
    ("which port the app to Go first?", None),
    ("kgo: unable to dial: x509: certificate signed by unknown authority", None),
    ("what is the marketing budget for Q3?", types.MONEY),
    # a budget of something measured is a limit in its own units
    ("what is the bundle size budget", None),
    ("what is the latency budget for the API", None),
    ("What's our error budget this quarter?", None),
])
def test_the_kind_of_value_a_question_asks_for(query, kind):
    assert types.asked(query) is kind


@pytest.mark.parametrize("kind, text, holds", [
    (types.PHONE, "Support line: +44 20 7946 0958 (24/7).", True),
    (types.PHONE, "call 555-0100", True),
    (types.PHONE, "from 2041-06-10 to 2041-06-12, at 10:30", False),   # days and times are no number to call
    (types.PHONE, "version 1.2.3", False),
    (types.PORT, "The gRPC API listens on 9443 inside the cluster.", True),
    (types.PORT, "DATABASE_URL points at db1:5432", True),
    (types.PORT, "S3 API on port 9000, the console on 9001", True),
    (types.PORT, "docker run -p 8080:80 nginx", True),
    (types.PORT, "open 5514/udp on the firewall", True),
    (types.PORT, "at 10:30 the deploy of 2.4.1 finished (PR #1234)", False),   # a time, a version, a number
    (types.MONEY, "It costs $1,200 a year.", True),
    (types.MONEY, "EUR 400 per month", True),
    (types.MONEY, "Pro: 3.99 / 29.99", True),
    (types.MONEY, "a 1.2k€ quote", True),
    (types.MONEY, "1,650 credits a day", False),
    (types.MONEY, "Sentry: traces 0.05 since 04-25", False),   # a fraction is a rate, not a price
    (types.MONEY, "the plan went from 0.99 to $1.49", True),
    (types.IP_ADDRESS, "listens on 10.40.1.12:5432", True),
    (types.IP_ADDRESS, "at 10:30:00 the host rebooted", False),
])
def test_a_value_of_the_kind_is_recognised_in_a_sections_text(kind, text, holds):
    assert types.holds(kind, text) is holds


def test_a_question_asking_for_a_phone_number_no_section_writes_is_no_strong_match(tmp_path, tiny_engine, monkeypatch):
    """The vendor is described, its support too — not its phone number: the search says so, and
    keeps the sections it found as the weak best. Where the notes write the number, it answers."""
    query = "What's Tillpoint's support phone number?"
    engine = tiny_engine(write_tree(tmp_path / "without", {
        "vendors.md": "# Vendors\n\n## Tillpoint\n\nThe POS vendor. Support goes through their portal; "
                      "the phone number is in the contract.\n\n## SkyCast\n\nThe weather feed, support by mail.\n"}))
    got = search(engine.view(), SearchRequest(query, limit=3)).to_json()
    assert got["no_strong_match"] is True, got
    assert any("a phone number" in why for why in got["why_no_strong_match"]), got
    assert got["best_weak"], got   # the sections found are still shown, as weak
    monkeypatch.setattr(search_mod, "ANSWER_TYPE_ABSTENTION", False)
    assert search(engine.view(), SearchRequest(query, limit=3)).to_json()["no_strong_match"] is False

    monkeypatch.setattr(search_mod, "ANSWER_TYPE_ABSTENTION", True)
    written = tiny_engine(write_tree(tmp_path / "with", {
        "vendors.md": "# Vendors\n\n## Tillpoint\n\nThe POS vendor. Support goes through their portal; "
                      "the phone number is +44 20 7946 0958.\n\n## SkyCast\n\nThe weather feed, support by mail.\n"}))
    got = search(written.view(), SearchRequest(query, limit=3)).to_json()
    assert got["no_strong_match"] is False, got
    assert got["results"][0]["path"] == "vendors.md", got
