"""What of a rewritten file the commit-time secret scan must read: the parts that are new.

A secret scan before a commit (`UnitOfWork.apply_and_commit`) keeps a secret out of history;
text the file already had at HEAD is in history already, and scanning it again finds nothing
that this commit adds. For a large file memoryd rewrote in a few places (the index of a big
store, `life/index.md`: 0.5 MB for 5,000 entities, a few lines changed per heartbeat; its
whole scan cost about 0.04 s of each heartbeat), `changed_windows` gives the parts of the new
text to scan: every line that is not where the old text had it, with `context` lines around it.

What the scan of the windows still finds, exactly: every match of the new text that spans at
most `context + 1` lines and is not a piece of the old text as it was. Proof: the lines left
unmarked come in runs, each of which is a run of consecutive old lines in their old order (a
line is unmarked only when it is the old line right after the previous unmarked one; a jump
over deleted old lines marks the lines on both sides of the jump, an inserted line is marked).
A match lying within one such run is a piece of the old text. Any other match contains a
marked line m, and spanning at most `context + 1` lines it lies within m's window
[m - context, m + context], which is scanned whole. (Matches longer than that which reach into
old text are the one thing a window can miss; the caller only uses windows when the old text
is HEAD's, and with a wide context.)
"""

from __future__ import annotations

from bisect import bisect_left


def changed_windows(old: str, new: str, context: int) -> list[str]:
    """The pieces of `new` to scan (see the module docstring): the lines changed from `old`,
    each with `context` lines on either side, overlapping windows merged; [] when none."""
    old_lines = old.split("\n")
    new_lines = new.split("\n")
    where: dict[str, list[int]] = {}
    for position, line in enumerate(old_lines):
        where.setdefault(line, []).append(position)
    marked: list[int] = []
    expected = 0  # the old line an unchanged new line must be
    for index, line in enumerate(new_lines):
        if expected < len(old_lines) and old_lines[expected] == line:
            expected += 1
            continue
        positions = where.get(line, ())
        found = bisect_left(positions, expected)
        if found < len(positions):  # old lines were left out before this one: a new seam
            marked.extend((index - 1, index) if index else (index,))
            expected = positions[found] + 1
        else:  # a new line
            marked.append(index)
    if expected < len(old_lines):  # old lines left out at the end
        marked.append(len(new_lines) - 1)
    windows: list[tuple[int, int]] = []
    for index in marked:
        start, end = max(0, index - context), min(len(new_lines), index + context + 1)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
        else:
            windows.append((start, end))
    return ["\n".join(new_lines[start:end]) for start, end in windows]
