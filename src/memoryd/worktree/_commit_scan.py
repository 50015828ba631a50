"""The secret scan of a unit of work's files just before its commit: a file whose new text
holds a secret is written but left out of the commit (see `UnitOfWork.apply_and_commit`).

Only what the commit adds to history is read: the whole new text, or, for a large file memoryd
rewrote from what HEAD holds, its changed lines with some context (`_scanwindows`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import structlog

from memoryd.gitrepo import GitStore, blob_name
from memoryd.worktree._foreign import WithheldFile
from memoryd.worktree._scanwindows import changed_windows

log = structlog.get_logger("memoryd.store.unit")  # the unit's logger: its events keep the name

# A staged file at least this long, rewritten from HEAD's content, has only its changed lines
# (with this many lines around each) scanned for secrets before the commit (`parts_to_scan`).
WINDOWED_SCAN_CHARS = 64 * 1024
SCAN_CONTEXT_LINES = 32


def withheld_files(
    git: GitStore,
    texts: Mapping[str, str],
    read: Mapping[str, str | None],
    scanner: Callable[[str], list[str]],
) -> tuple[WithheldFile, ...]:
    """The files of `texts` (store-relative path -> new text) whose new text holds a secret,
    in path order; `read` holds the old text of the files the unit read."""
    withheld = []
    for key, text in sorted(texts.items()):
        parts = parts_to_scan(git, key, text, read.get(key))
        kinds = [kind for part in parts for kind in scanner(part)]
        if kinds:
            withheld.append(WithheldFile(key, tuple(sorted(set(kinds)))))
            log.warning("store.commit_withheld", path=key, secret_kinds=sorted(set(kinds)))
    return tuple(withheld)


def parts_to_scan(git: GitStore, key: str, text: str, old: str | None) -> list[str]:
    """The parts of `text`, the new content of `key`, that the secret scan must read: the
    whole text, or for a large file whose old content `old` memoryd read and HEAD holds as it
    is, the lines changed with `SCAN_CONTEXT_LINES` around them (what HEAD has is in history
    already; `memoryd.worktree._scanwindows` says what the windows still find)."""
    if old is None or len(text) < WINDOWED_SCAN_CHARS:
        return [text]
    committed = git.blob_at_head(key)
    if committed is None or blob_name(old.encode("utf-8"), committed) != committed:
        return [text]  # someone's edit memoryd read (withheld, or made since): all of it
    return changed_windows(old, text, SCAN_CONTEXT_LINES)
