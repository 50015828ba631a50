"""Merge by meaning of one fact changed on both sides (for `memoryd.sync._merge`'s items.json).

Each field comes from the side that changed it; a field both changed differently (a person's
correction of the text) keeps the remote's value and is reported. `status` and `supersededBy`
move together. A retraction (`memoryd forget`: status `retracted` and a `retraction` record)
made on one side and not the other stands, composed with the other side's supersession (its
`supersededBy` is kept): both say the fact is no longer true, and neither is lost. The keys
memoryd does not model (the `retraction` record, a person's own key) are merged one by one the
same way. Access counts add up and `lastAccessed` takes the later date.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from memoryd.store.items import Fact

_MERGED_FIELDS = ("access_count", "last_accessed", "extra", "id")
_ABSENT: Any = object()


def merge_fact(base: Fact | None, ours: Fact, theirs: Fact, contradictions: list[str]) -> Fact:
    """Field by field: each from the side that changed it; see the module docstring."""
    changes: dict[str, Any] = {}
    retracting = _retracting(base, ours, theirs)
    for item in fields(Fact):
        name = item.name
        if name in _MERGED_FIELDS or (retracting and name in ("status", "superseded_by")):
            continue
        mine, remote = getattr(ours, name), getattr(theirs, name)
        before = getattr(base, name) if base is not None else None
        if mine in (remote, before):
            continue
        if remote == before:
            changes[name] = mine
        elif name not in ("superseded_by",):
            contradictions.append(f"{theirs.id}: {name} changed on both sides: the remote's kept")
    if retracting:
        before = base.superseded_by if base is not None else None
        remote_moved = theirs.superseded_by != before
        changes["status"] = "retracted"
        changes["superseded_by"] = theirs.superseded_by if remote_moved else ours.superseded_by
    elif "status" in changes and "superseded_by" not in changes:
        changes["superseded_by"] = ours.superseded_by
    elif "superseded_by" in changes and "status" not in changes:
        changes["status"] = ours.status
    extra = _merge_extra(base, ours, theirs, contradictions)
    if extra != theirs.extra:
        changes["extra"] = extra
    gained = ours.access_count - (base.access_count if base is not None else 0)
    changes["access_count"] = theirs.access_count + max(0, gained)
    changes["last_accessed"] = max(ours.last_accessed, theirs.last_accessed)
    return replace(theirs, **changes)


def _retracting(base: Fact | None, ours: Fact, theirs: Fact) -> bool:
    """Whether one side retracted the fact the other did not: the retraction stands."""
    statuses = {ours.status, theirs.status}
    was_retracted = base is not None and base.status == "retracted"
    return len(statuses) == 2 and "retracted" in statuses and not was_retracted


def _merge_extra(
    base: Fact | None, ours: Fact, theirs: Fact, contradictions: list[str]
) -> dict[str, Any]:
    """The keys memoryd does not model (a `retraction` record), one by one."""
    before = base.extra if base is not None else {}
    merged = dict(theirs.extra)
    for key in sorted(set(ours.extra) | set(theirs.extra)):
        mine = ours.extra.get(key, _ABSENT)
        remote = theirs.extra.get(key, _ABSENT)
        was = before.get(key, _ABSENT)
        if mine in (remote, was):
            continue
        if remote == was:
            if mine is _ABSENT:
                merged.pop(key, None)
            else:
                merged[key] = mine
        else:
            contradictions.append(f"{theirs.id}: {key} changed on both sides: the remote's kept")
    return merged
