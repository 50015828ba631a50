"""Drop branches a transcript tree abandoned (a Claude Code rewind, an OpenClaw branch switch).

Records name their parent; the current branch is the chain of parents from the last dialogue
record of a session (the leaf). Within what one read sees, a record is *abandoned* when it is not
on that chain but its own ancestry reaches the chain, or reaches a node read earlier (`known`),
and the first record of its branch (the child of that meeting point) `opens_branch`: a new
prompt or reply that replaced another, as a rewind or a branch switch writes it. Siblings whose
branch starts otherwise (tool results of parallel calls hanging from their calls) are kept. A
record whose ancestry ends at an unknown parent (a line lost to corruption, an excerpt) or at a
root of its own is kept, because nothing shows it was abandoned; dropping it could lose the
words of the current branch.

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
    first = leaf
    while cursor is not None and cursor in nodes and cursor not in on_branch:
        on_branch.add(cursor)
        first = nodes[cursor]
        cursor = first.parent
    anchors = set(on_branch)
    if cursor is not None:
        anchors.add(cursor)  # where the branch leaves this read: siblings from there are stale
    # When the branch starts at a prompt without a parent, another root is a sibling too (a
    # rewind to the very first prompt writes a new root). A structural root (a compaction
    # boundary that lost its logical parent) proves nothing about what came before it.
    root_is_anchor = cursor is None and first.opens_branch

    def is_anchor(uid: str | None) -> bool:
        if uid is None:
            return root_is_anchor
        return uid in anchors or known(uid)

    verdicts: dict[str, bool] = {}
    return [
        record
        for record in members
        if not (record.uid is not None and record.uid in on_branch)
        and _abandoned(record, nodes, is_anchor, verdicts)
    ]


def _abandoned(
    record: Record,
    nodes: dict[str, Record],
    is_anchor: Callable[[str | None], bool],
    verdicts: dict[str, bool],
) -> bool:
    """Whether `record` sits on a branch that forks off the current one (memoised per uid)."""
    walked: list[Record] = []
    visited: set[int] = set()
    current = record
    verdict = False
    while True:
        walked.append(current)
        visited.add(id(current))
        parent = current.parent
        if is_anchor(parent):
            # `current` is the first record of a sibling branch: a fork made by a new prompt
            # (a rewind, a branch switch) abandons it; parallel tool results do not.
            verdict = current.opens_branch
            break
        if parent is None:
            break
        if parent in verdicts:
            verdict = verdicts[parent]
            break
        node = nodes.get(parent)
        if node is None or id(node) in visited:
            break  # an unknown parent or a loop: nothing shows this branch was left
        current = node
    for item in walked:
        if item.uid is not None:
            verdicts[item.uid] = verdict
    return verdict
