"""Where the store keeps entities: the shape of an entity folder's name, and which bucket entry
(kind and name) a store path is in. Shared by the catalogue's load and its snapshot.
"""

from __future__ import annotations

import re

from memoryd.store.entities import ARCHIVES, LAYOUTS, LIFE
from memoryd.store.vocabulary import EntityKind

# Ends at "\Z": "$" also matches before a final newline ("acme\n").
SLUG_SHAPE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")
# Bucket folders nested inside the `areas` bucket are not area entities.
NESTED_BUCKETS = frozenset(
    layout.bucket.split("/", 1)[1] for layout in LAYOUTS.values() if "/" in layout.bucket
)
# Buckets by depth, deepest first: `areas/people` before `areas`.
_BUCKETS = sorted(
    ((kind, layout.bucket.split("/")) for kind, layout in LAYOUTS.items()),
    key=lambda item: -len(item[1]),
)


def bucket_entry(path: str) -> tuple[EntityKind, str] | None:
    """The (kind, name) of the bucket entry (active or archived) a store path is in or is, or
    None outside every bucket (`life/index.md`) or for what `load` skips (hidden names, the
    buckets nested in `areas`). The entity it holds, if any, has the ref of that kind and
    name."""
    parts = path.split("/")
    if parts[0] != LIFE:
        return None
    rest = parts[2:] if len(parts) > 1 and parts[1] == ARCHIVES else parts[1:]
    for kind, bucket in _BUCKETS:
        depth = len(bucket)
        if len(rest) > depth and rest[:depth] == bucket:
            name = rest[depth]
            if name.startswith(".") or (kind == "area" and name in NESTED_BUCKETS):
                return None
            return kind, name
    return None
