"""Building large long-lived structures without the cyclic garbage collector's passes.

Importing a large library (the Anthropic SDK defines some 1,500 pydantic classes) or loading the
entity catalogue's snapshot creates many containers in one go, almost none of them garbage. In a
heartbeat the SDK is imported when its first call is made, after the catalogue is in memory, so
every collection during the import also walks the catalogue: its cost grew with the store.

The snapshot (`memoryd.store.catalog._snapshot`) is some hundred thousand containers (entities,
label sets, the mention trie's nodes). Each young-generation threshold crossed while such a block
runs starts a collection that walks the containers made so far, and the growth of the old
generation soon forces a full one: on a store of 5,000 entities the collector's passes cost as
much as the load itself (about 0.06 s of 0.12 s). `collection_paused` switches the collector
off for the length of such a block and back on after it (if it was on): no object is freed
later or earlier than it would have been by reference counting, and any cycle left unreachable
meanwhile is collected by the next pass after the block. `memoryd.cli.startup` builds the
start-up's pause (which also freezes) on this one.

Switched back on, the collector would still walk what the block made twice more: the first
young-generation pass finds the whole block's containers young and moves them to the middle
generation, whose next pass walks them again. After the SDK's import that was about 0.08 s of
every heartbeat that called the model, and after the snapshot's load a cost in the store's
size. `long_lived` therefore also freezes (`gc.freeze`) what is alive after the block, when it
runs inside `frozen_while`: the heartbeat's scope, at whose end everything frozen is handed back
to the collector (`gc.unfreeze`, into the oldest generation). Nothing is ever kept from the
collector for longer than the heartbeat, so a daemon running heartbeats for months cannot gather
uncollectable cycles this way; outside a scope `long_lived` only pauses.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_scopes = 0
_scope_lock = threading.Lock()


@contextmanager
def collection_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector switched off (restored after it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def frozen_while() -> Iterator[None]:
    """A scope (a heartbeat) in which `long_lived` blocks freeze what they built; at the end
    of the outermost one, everything frozen is given back to the collector."""
    global _scopes  # noqa: PLW0603 - one count per process, by design
    with _scope_lock:
        _scopes += 1
    try:
        yield
    finally:
        with _scope_lock:
            _scopes -= 1
            if _scopes == 0:
                gc.unfreeze()


@contextmanager
def long_lived() -> Iterator[None]:
    """`collection_paused`, and inside a `frozen_while` scope a freeze of the heap after the
    block (see the module docstring)."""
    with collection_paused():
        yield
        if _scopes:
            gc.freeze()
