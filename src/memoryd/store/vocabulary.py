"""The memory model's vocabulary (docs/store-format.md, Entities; docs/store-format.md, Facts;
docs/llm-contract.md), declared once for the whole package:
the kinds of entity, their lifecycle statuses and the categories of fact.

The LLM tool contract, the markers provider and the store all use these names; the store's
folders for each kind are in `memoryd.store.entities`.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

EntityKind = Literal["person", "company", "project", "area", "resource"]
EntityStatus = Literal["active", "completed", "inactive"]
Category = Literal["relationship", "milestone", "status", "preference", "decision", "context"]

KINDS: Final[tuple[EntityKind, ...]] = get_args(EntityKind)
STATUSES: Final[tuple[EntityStatus, ...]] = get_args(EntityStatus)
CATEGORIES: Final[tuple[Category, ...]] = get_args(Category)
