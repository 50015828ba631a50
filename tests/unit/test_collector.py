"""The cyclic garbage collector paused for a block (`memoryd.collector`)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from memoryd.collector import collection_paused, frozen_while, long_lived


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collector_on")
def test_paused_inside_and_on_again_after() -> None:
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_on_again_after_an_error() -> None:
    with pytest.raises(RuntimeError), collection_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    with collection_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_cycles_made_meanwhile_are_collected_after() -> None:
    class Node:
        other: object = None

    with collection_paused():
        first, second = Node(), Node()
        first.other, second.other = second, first
        alive = weakref.ref(first)
        del first, second
        kept = [Node() for _ in range(10_000)]  # past every threshold: no pass runs
        assert alive() is not None
    del kept
    gc.collect()
    assert alive() is None


class _Node:
    other: object = None


def _cycle() -> weakref.ref[_Node]:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    return weakref.ref(first)


@pytest.mark.usefixtures("collector_on")
def test_outside_a_scope_a_long_lived_block_only_pauses() -> None:
    before = gc.get_freeze_count()
    with long_lived():
        assert not gc.isenabled()
        kept = [[n] for n in range(1_000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == before
    assert kept


@pytest.mark.usefixtures("collector_on")
def test_in_a_scope_what_a_block_built_is_frozen_until_the_scope_ends() -> None:
    with frozen_while():
        with long_lived():
            alive = _cycle()
            kept = [[n] for n in range(1_000)]
        assert gc.get_freeze_count() >= len(kept)
        gc.collect()
        assert alive() is not None  # frozen: no pass looks at it
        with frozen_while():  # a scope inside: the outer one's end unfreezes
            pass
        assert gc.get_freeze_count() >= len(kept)
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert alive() is None  # handed back to the collector, and collected


@pytest.mark.usefixtures("collector_on")
def test_a_scope_that_fails_still_gives_everything_back() -> None:
    with pytest.raises(RuntimeError), frozen_while():
        with long_lived():
            _cycle()
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()
