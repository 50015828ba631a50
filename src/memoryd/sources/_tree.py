"""Drop branches a transcript tree abandoned (a Claude Code rewind, an OpenClaw branch switch).

Records name their parent; the current branch is the chain of parents from the last dialogue
record of a session (the leaf). Within what one read sees, a record is *abandoned* when it is not
on that chain but its own ancestry reaches the chain, or reaches a node read earlier (`known`):
it is then a sibling of the current branch, left behind. A record whose ancestry ends at an
unknown parent (a line lost to corruption, an excerpt) or at a root of its own is kept, because
nothing shows it was abandoned; dropping it could lose the words of the current branch.

Sidechains (subagent chatter inside the same file) have trees of their own and are not pruned.
A branch abandoned *after* it was read cannot be taken back: that is the one difference an
incremental read may show against reading the whole file at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memoryd.sources.records import Record


def prune_abandoned(records: Sequence[Record], known: Callable[[str], bool]) -> list[Record]:
    """Return `records` without the ones on abandoned branches, in their original order."""
    sessions: dict[str, list[Record]] = {}
    for record in records:
        if not record.sidechain:
            sessions.setdefault(record.session_id, []).append(record)
    abandoned: set[int] = set()
    for members in sessions.values():
        abandoned.update(id(record) for record in _abandoned_in_session(members, known))
    return [record for record in records if id(record) not in abandoned]


def _abandoned_in_session(members: list[Record], known: Callable[[str], bool]) -> list[Record]:
    nodes: dict[str, Record] = {}
    for record in members:
        if record.uid is not None:
            nodes.setdefault(record.uid, record)
    leaf = next(
        (r for r in reversed(members) if r.leaf_candidate and r.uid is not None),
        None,
    )
    if leaf is None:
        return []
    on_branch: set[str] = set()
    cursor: str | None = leaf.uid
    while cursor is not None and cursor in nodes and cursor not in on_branch:
        on_branch.add(cursor)
        cursor = nodes[cursor].parent
    anchors = set(on_branch)
    if cursor is not None:
        anchors.add(cursor)  # where the branch leaves this read: siblings from there are stale

    def is_anchor(uid: str) -> bool:
        return uid in anchors or known(uid)

    verdicts: dict[str, bool] = {}
    result = []
    for record in members:
        if record.uid is not None and record.uid in on_branch:
            continue
        if _reaches(record.parent, nodes, is_anchor, verdicts):
            result.append(record)
    return result


def _reaches(
    start: str | None,
    nodes: dict[str, Record],
    is_anchor: Callable[[str], bool],
    verdicts: dict[str, bool],
) -> bool:
    """Whether the ancestry from `start` reaches an anchor; memoised along the walked chain."""
    walked: list[str] = []
    walked_set: set[str] = set()
    cursor = start
    verdict = False
    while cursor is not None:
        if cursor in verdicts:
            verdict = verdicts[cursor]
            break
        if is_anchor(cursor):
            verdict = True
            break
        if cursor not in nodes or cursor in walked_set:
            break
        walked.append(cursor)
        walked_set.add(cursor)
        cursor = nodes[cursor].parent
    for uid in walked:
        verdicts[uid] = verdict
    return verdict
