"""Fact ids unique across the hosts of a shared store, without a coordinator (docs/store-format.md,
Facts)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memoryd.store.catalog import EntityCatalog
from memoryd.store.facts import FactBook, FactDraft, FactFile, FactSource
from memoryd.store.index import gist_of
from memoryd.store.items import host_code_of, host_id_code, next_fact_id, split_fact_id
from memoryd.store.summaries import CITED_ID

from .conftest import TODAY, DirTransaction

SOURCE = FactSource("agent", "s", "/t/a.jsonl", (1, 2))


def draft(text: str, supersedes: tuple[str, ...] = ()) -> FactDraft:
    return FactDraft(text, "context", date(2026, 1, 1), date(2026, 1, 1), SOURCE, (), supersedes)


def test_a_single_host_store_keeps_the_short_numbers() -> None:
    assert next_fact_id("jane-doe", []) == "jane-doe-001"
    assert next_fact_id("jane-doe", ["jane-doe-001", "jane-doe-007"]) == "jane-doe-008"
    # Ids of a shared store's hosts do not push the short numbers into their range.
    assert next_fact_id("jane-doe", ["jane-doe-004", "jane-doe-4711003"]) == "jane-doe-005"


def test_each_host_numbers_in_its_own_range() -> None:
    code = host_id_code("host-a")
    assert 1000 <= code <= 9999
    assert host_id_code("host-a") == code  # from the name alone: no coordinator
    first = next_fact_id("jane-doe", ["jane-doe-001", "jane-doe-002"], code)
    assert first == f"jane-doe-{code}001"
    assert next_fact_id("jane-doe", [first, "jane-doe-9999999"], code) == f"jane-doe-{code}002"
    assert host_code_of(first) == code
    assert host_code_of("jane-doe-004") is None


def test_ids_of_both_forms_parse_and_resolve_like_the_old_ones() -> None:
    code = host_id_code("host-b")
    new = next_fact_id("acme", [], code)
    assert split_fact_id(new) == ("acme", int(f"{code}001"))
    # The rewrite's citation check and the index's gist cleaner know the new ids.
    assert CITED_ID.fullmatch(new)
    assert gist_of(f"- Works at Acme [{new}]\n") == "Works at Acme"


@given(st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=2, unique=True))
def test_two_hosts_never_give_the_same_id_unless_their_codes_collide(hosts: list[str]) -> None:
    codes = [host_id_code(h) for h in hosts]
    ids = [next_fact_id("x", ["x-001"], c) for c in codes]
    assert (ids[0] == ids[1]) == (codes[0] == codes[1])


def test_hosts_filing_the_same_entity_apart_never_collide(tmp_path: Path) -> None:
    results = []
    for host in ("host-a", "host-c"):
        root = tmp_path / host
        root.mkdir()
        tx = DirTransaction(root)
        catalog = EntityCatalog.load(tx)
        jane = catalog.create("Jane Doe", "person", today=TODAY)
        book = FactBook(tx, catalog, host_code=host_id_code(host))
        first = book.file_for(jane).add(draft("Works at Acme"), recorded_at=TODAY).fact
        second = book.file_for(jane).add(draft("Works at Initech", (first.id,)), recorded_at=TODAY)
        assert second.supersession.superseded == (first.id,)
        results.append({first.id, second.fact.id})
    assert not results[0] & results[1]


def test_a_fact_file_given_a_host_code_numbers_after_its_own_ids(tx: DirTransaction) -> None:
    catalog = EntityCatalog.load(tx)
    jane = catalog.create("Jane Doe", "person", today=TODAY)
    plain = FactFile(tx, jane)
    assert plain.add(draft("Old fact"), recorded_at=TODAY).fact.id == "jane-doe-001"
    plain.save()
    coded = FactFile(tx, jane, host_code=4242)
    assert coded.add(draft("New fact"), recorded_at=TODAY).fact.id == "jane-doe-4242001"
    assert coded.add(draft("Newer fact"), recorded_at=TODAY).fact.id == "jane-doe-4242002"
    assert [f.id for f in coded.facts()] == ["jane-doe-001", "jane-doe-4242001", "jane-doe-4242002"]
