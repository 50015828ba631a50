"""The entity catalogue: every entity in the store, found by ref, slug, name, alias or mention.

`load_catalog` gives a job the catalogue, from the fastest of its caches that is still true
(the kept catalogue of a long-lived process, the snapshot saved at a commit, the per-entity
cache), else from the store's files; `save_snapshot` keeps it after a commit. The caches' files
and formats are private to this package.
"""

from __future__ import annotations

from memoryd.store.catalog._cache import load_catalog
from memoryd.store.catalog._catalog import EntityCatalog, entity_at
from memoryd.store.catalog._layout import bucket_entry
from memoryd.store.catalog._prose import Lookalike, ProseFinding, find_in_prose
from memoryd.store.catalog._snapshot import followed_paths, save_snapshot

__all__ = [
    "EntityCatalog",
    "Lookalike",
    "ProseFinding",
    "bucket_entry",
    "entity_at",
    "find_in_prose",
    "followed_paths",
    "load_catalog",
    "save_snapshot",
]
