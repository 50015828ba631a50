"""The cyclic garbage collector paused for a block (`memoryd.collector`)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from memoryd.collector import collection_paused


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
