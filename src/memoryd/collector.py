"""Building large long-lived structures without the cyclic garbage collector's passes.

Importing a large library (the Anthropic SDK defines some 1,500 pydantic classes) or loading the
entity catalogue's snapshot creates many containers in one go, almost none of them garbage. In a
heartbeat the SDK is imported when its first call is made, after the catalogue is in memory, so
every collection during the import also walks the catalogue: its cost grew with the store.

Loading the entity catalogue's snapshot (`memoryd.store.catalog_snapshot`) creates some
hundred thousand containers (entities, label sets, the mention trie's nodes) in one go, none of
them garbage. Each young-generation threshold crossed meanwhile starts a collection that walks
the containers made so far, and the growth of the old generation soon forces a full one: on a
store of 5,000 entities the collector's passes cost as much as the load itself (about 0.06 s of
0.12 s). `collection_paused` switches the collector off for the length of such a block and
back on after it (if it was on): no object is freed later or earlier than it would have been by
reference counting, and any cycle left unreachable meanwhile is collected by the next pass after
the block. `memoryd.cli.startup` builds the start-up's pause (which also freezes) on this one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
