"""Merge by meaning for the store's records under `.memoryd/` (for `memoryd.sync._merge`).

- `.memoryd/provenance/<path>.json` (the sources of each filed tip, `memoryd.store.provenance`):
  a record that only grows. The tips of both sides are kept, each with the union of its sources.
- `.memoryd/review/<id>.json` (a tip the safety gate held, `memoryd.store.review`): the id is
  derived from what would be filed, so two hosts holding the same tip write the same file. The
  sources and the reasons are joined, the first day it was held is kept, and a decision
  (accepted or rejected) wins over `held`: a decision made on one host stands once the other
  host's new sources are merged in. Two different decisions are a real contradiction: the
  remote's is kept and reported.
- `.memoryd/reads/<host>.json` (the reads a host counted as accesses, `memoryd.store.reads`):
  written by its host only, so both sides change it only when two machines run under one host
  name (or a person edited it). A key is "counted" if either side counted it: the union, which
  never counts a read again; keys past `KEEP_DAYS` leave at the host's next write.

Everything here is a pure function of bytes, like `memoryd.sync._merge`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

from memoryd.store.provenance import PROVENANCE_DIR, parse_provenance, render_provenance
from memoryd.store.reads import READS_DIR, parse_reads, render_reads
from memoryd.store.review import REVIEW_DIR, ReviewItem, parse_item, render_item

_PREFIXES: Final = (f"{PROVENANCE_DIR}/", f"{REVIEW_DIR}/", f"{READS_DIR}/")


@dataclass
class RecordMerge:
    """The merged text of one record and the contradictions given up to get it."""

    data: bytes
    contradictions: list[str] = field(default_factory=list)


def is_record(store_path: str) -> bool:
    """Whether `store_path` is one of the records merged here."""
    return store_path.endswith(".json") and store_path.startswith(_PREFIXES)


def merge_record(store_path: str, ours: bytes, theirs: bytes) -> RecordMerge:
    """Merge the two sides of a record (see the module docstring). Raise ValueError (or
    UnicodeDecodeError) for a side that is not what memoryd writes: the caller keeps the
    remote's then."""
    mine, remote = ours.decode(), theirs.decode()
    if store_path.startswith(f"{PROVENANCE_DIR}/"):
        tips = parse_provenance(remote)
        for tip, sources in parse_provenance(mine).items():
            tips[tip] = [*tips.get(tip, []), *sources]
        return RecordMerge(render_provenance(tips).encode())
    if store_path.startswith(f"{READS_DIR}/"):
        return RecordMerge(render_reads(parse_reads(mine) | parse_reads(remote)).encode())
    return _merge_review(parse_item(mine), parse_item(remote))


def _merge_review(ours: ReviewItem, theirs: ReviewItem) -> RecordMerge:
    contradictions: list[str] = []
    merged = replace(
        theirs,
        sources=tuple(sorted(set(theirs.sources) | set(ours.sources))),
        reasons=tuple(sorted(set(theirs.reasons) | set(ours.reasons))),
        held=min(theirs.held, ours.held),
    )
    if theirs.status == "held" and ours.status != "held":
        merged = replace(merged, status=ours.status, decided=ours.decided)
    elif "held" not in (ours.status, theirs.status) and ours.status != theirs.status:
        contradictions.append(
            f"{theirs.id} {ours.status} here on {ours.decided} but {theirs.status} on the remote "
            f"on {theirs.decided}: the remote's decision kept"
        )
    return RecordMerge(render_item(merged).encode(), contradictions)
