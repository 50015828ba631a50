"""Text normalization shared by the store's content modules.

Two comparisons matter to the store, and they are deliberately different:

- *statements* (facts, tips, tacit lines, timeline entries) are compared for duplicates after
  Unicode compatibility folding, case folding, whitespace collapsing and dropping trailing
  punctuation, but punctuation inside the text still counts ("Uses C++" is not "Uses C");
- *names* (entities, skill topics) are compared as sequences of words: accents folded, case
  folded, punctuation dropped, so "Acme, Inc." and "acme inc" are the same words.

Every function here is pure and total: any string in, a string out.
"""

from __future__ import annotations

import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")
# Letters and digits of any script; underscores count as separators, like other punctuation.
_WORD = re.compile(r"[^\W_]+")
_TRAILING_PUNCTUATION = ".!;:,"


def one_line(text: str) -> str:
    """Collapse every run of whitespace (newlines included) to one space and strip the ends."""
    return _WHITESPACE.sub(" ", text).strip()


def fold(text: str) -> str:
    """Fold accents to their base letters and case-fold, keeping letters of other scripts."""
    if text.isascii():  # nothing to decompose or recompose (the common case, cheaply)
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped).casefold()


def words(text: str) -> list[str]:
    """The folded words of `text`, in order; punctuation and whitespace separate them."""
    return _WORD.findall(fold(text))


def normalize_statement(text: str) -> str:
    """The form two statements are compared in to decide that they say the same thing."""
    compact = one_line(unicodedata.normalize("NFKC", text)).casefold()
    return compact.rstrip(_TRAILING_PUNCTUATION + " ")


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters (with '…')."""
    line = one_line(text)
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip() + "…"
