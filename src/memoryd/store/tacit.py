"""The tacit file (config `store.tacit_file`, default `MEMORY.md`): how the user operates.

A Markdown file with a header and one bullet per piece of tacit knowledge (a preference, a
working style, a rule). A heartbeat only appends: each new line becomes a bullet at the end,
unless an existing bullet already says the same in the same words (compared with
`normalize_statement`). A file without a top heading gets the header prepended. Merging the
bullets that say the same in other words, and keeping the file under its bound, is the weekly
rewrite's job (`memoryd.rewrite.tacit_merge`), not this module's; neither ever rewrites a line
of the file that is not a bullet.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from memoryd.store.markdown import bullet_text
from memoryd.store.text import normalize_statement, one_line, words
from memoryd.worktree import FileTransaction

HEADER: Final = (
    "# Tacit knowledge\n"
    "\n"
    "How the user operates: preferences, working style, rules. Filed by memoryd; edit freely.\n"
)


def clean_statement(statement: str) -> str:
    """A tacit line as it is filed: on one line, without a bullet of its own."""
    cleaned = one_line(statement)
    return one_line(bullet_text(cleaned) or cleaned)


def add_tacit(tx: FileTransaction, relative: str, statements: Iterable[str]) -> list[str]:
    """Append each statement as a bullet to the tacit file at `relative` (created with its
    header if absent), skipping ones already there; return the bullets' texts that were added."""
    existing = tx.read_text(relative)
    text = existing if existing is not None else HEADER
    if not any(line.startswith("# ") for line in text.splitlines()[:1]):
        text = HEADER + "\n" + text
    seen = {
        normalize_statement(bullet)
        for bullet in map(bullet_text, text.splitlines())
        if bullet is not None
    }
    added: list[str] = []
    for statement in statements:
        cleaned = clean_statement(statement)
        key = normalize_statement(cleaned)
        if words(cleaned) and key not in seen:
            seen.add(key)
            added.append(cleaned)
    if not added:
        return []
    text = text.rstrip("\n") + "\n"
    last = text.rstrip("\n").splitlines()[-1]
    if bullet_text(last) is None:
        text += "\n"  # a list right after a paragraph or heading needs a blank line
    tx.write_text(relative, text + "".join(f"- {line}\n" for line in added))
    return added


# Words too common to tell two statements apart (with words of one or two letters, ignored).
_STOP = """
    about above after again against all also and any are because been before being below
    between both but can could did does doing down during each either else ever every few for
    from further had has have having her here hers him his how into its just like more most
    much must not now off once only other our ours out over own same she should some such than
    that the their theirs them then there these they this those through too under until use
    used user uses very via was were what when where which while who whom why will with would
    you your yours
"""
_STOP_WORDS = frozenset(_STOP.split())
TACIT_SHOWN_LINES = 8  # tacit lines shown with an excerpt, at most
TACIT_SHOWN_CHARS = 1600  # their characters in all, at most (about 400 tokens)


def _content_words(text: str) -> set[str]:
    return {
        word
        for word in words(text)
        if (len(word) > 2 or (word.isdigit() and word.strip("0"))) and word not in _STOP_WORDS
    }


def tacit_lines(text: str) -> list[str]:
    """The bullets of a tacit file's text, as filed (one line each)."""
    return [one_line(bullet) for bullet in map(bullet_text, text.splitlines()) if bullet]


def relevant_tacit(
    lines: Iterable[str],
    excerpt: str,
    *,
    max_lines: int = TACIT_SHOWN_LINES,
    max_chars: int = TACIT_SHOWN_CHARS,
) -> list[str]:
    """The tacit lines that share the most content words with `excerpt` (stop words, words
    of one or two letters and zeros aside), best first, ties in file order; a line sharing
    none is never chosen. At most `max_lines` lines and `max_chars` characters in all: a line
    that would pass the character bound is skipped for a shorter one after it."""
    wanted = _content_words(excerpt)
    scored = []
    for position, line in enumerate(lines):
        shared = len(_content_words(line) & wanted)
        if shared:
            scored.append((-shared, position, line))
    chosen: list[str] = []
    used = 0
    for _, _, line in sorted(scored):
        if len(chosen) >= max_lines:
            break
        if used + len(line) <= max_chars:
            chosen.append(line)
            used += len(line)
    return chosen
