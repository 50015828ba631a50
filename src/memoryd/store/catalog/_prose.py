"""Which known entities an excerpt names in prose, and which only look like a name in it.

Used to choose the entities an extraction request shows the model (docs/llm-contract.md,
Request context). Stricter than the catalogue's whole-word mention index (`mentioned_in`): a
name or alias counts only as a word of prose, as a person reading the excerpt would take it.

- The label's words are found in order, compared folded (case, accents, and the letters
  without a decomposition: "Søren" matches "Soren"). Between two of its words the text has white
  space, or the label's own punctuation ("Ana-María" matches "Ana-Maria", not "ana/maria").
- The occurrence stands alone between white space: before it only opening brackets or quotes,
  after it only closing ones, sentence punctuation or a possessive ("Dev's"). So a label inside
  a path (`/dev/sda1`), an identifier (`dev-server`, `dev_server`, `DevOps`), a URL, an e-mail
  address, a file name (`atlas.js`) or a longer word (`Devon`) is no mention.
- A one-word label that is also a common word ("Dev", "Mark", "Atlas") needs stronger evidence:
  it must be written capitalised and not in capitals ("Mark joined", not "mark the ticket" nor
  "the DEV environment"). At the start of a sentence this cannot tell a name from the word
  ("Dev builds are slow"): such an occurrence is taken as a mention. A label of several words
  is evidence enough in any case.
- A one-word label followed by a capitalised word is the first name of a longer name ("Mark" in
  "Mark Chenowith"), no mention.

A look-alike is a known entity whose label is close to a name written capitalised in the excerpt
without being it: the same first word and a different last one ("Mark Chen" for "Mark
Chenowith", "Jane Doe" for "Jane Smith"), or words a few letters apart with the same initials
("Jane Doe" for "Jane Doerr" or "Janet Doe"; for a one-word label, five letters or more and one
letter apart). They are shown to the model as different entities, so that it neither merges the
two nor misses the known one when the excerpt says they are the same.

Cost per excerpt: one pass to split the text into words, then, for each label of each entity,
a dictionary lookup of its first two words, and the look-alike comparisons with the distinct
capitalised phrases of the text of its length and first letter — linear in the number of labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

from memoryd.store.entities import Entity
from memoryd.store.text import fold

_TOKEN = re.compile(r"[^\W_]+")
_QUOTE = "\u2019"  # the typographic apostrophe
_OPENING = re.compile("[([{\"'\u201c\u2018\u00ab\u00bf\u00a1*]*")
_CLOSING = re.compile("(?:['\u2019]s?)?[)\\]}\"'\u201d\u2019\u00bb,.;:!?*\u2026]*")
_WHITE = re.compile(r"\s+")
# Letters `fold` keeps because Unicode gives them no base letter.
_EXTRA_FOLD = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ß": "ss", "ł": "l", "đ": "d"})
LOOKALIKE_LENGTH = 5  # the shortest one-word label compared letter by letter
# Common English words that are also short names, nicknames or project names: as a one-word
# label, one of these counts only when written capitalised in the excerpt.
_COMMON = """
    ace amber apple april art atlas august autumn bay bear bell berry bill birch bishop
    black blue bob bolt brook brown buck buddy bull bush cash chance chase cherry clay cliff
    cloud cole cook cooper core crane crow dale dash data dawn day dean dev diamond doc dot
    drew duke dusty early echo edge ember faith fern field fisher fleet flint ford forest
    fox frank gale gem glen gold grace grant gray green grey guy hall harmony hawk heath
    hill holly hope hunter iris ivy jack jade jay jet joy june king lake lance lark lane
    laurel lee long major march mark marsh mason may mercy miles mill moon moss nova oak
    ocean ops page palmer park parker pat patience pearl penny pepper piper poppy price
    prince prod rain ray reed rich river robin rock rose rowan ruby rush rust sage sandy
    scout shadow shell sky slate smith snow spring sparrow star sterling stone storm
    summer sunny swift tank taylor terry test tiger todd tucker vale victor violet walker
    ward wells west will willow winter wolf wood woods wren york young
"""
COMMON_WORDS = frozenset(_COMMON.split())


@dataclass(frozen=True)
class Lookalike:
    """A known entity close to a name the excerpt writes, but not it."""

    entity: Entity
    seen: str  # the name as the excerpt writes it


@dataclass
class ProseFinding:
    mentioned: list[Entity] = field(default_factory=list)
    lookalikes: list[Lookalike] = field(default_factory=list)


@dataclass(frozen=True)
class _Token:
    word: str  # folded
    start: int
    end: int


def fold_word(word: str) -> str:
    """A word as labels and text are compared: folded, with the letters `fold` keeps mapped."""
    return fold(word).translate(_EXTRA_FOLD)


@lru_cache(maxsize=65536)
def _label_parts(label: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The label's folded words and the separators between them (stripped; "" for space)."""
    spans = list(_TOKEN.finditer(label))
    label_words = tuple(fold_word(match.group()) for match in spans)
    gaps = tuple(label[left.end() : right.start()].strip() for left, right in pairwise(spans))
    return label_words, gaps


def find_in_prose(text: str, entities: Iterable[Entity]) -> ProseFinding:
    """The entities `text` names in prose (in the order given) and the look-alikes of names
    it writes (module docstring)."""
    tokens = [_Token(fold_word(m.group()), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    # Where each word, and each pair of consecutive words, starts: a label is looked up by its
    # first two words, so a common first word ("Client 0042 Holdings") is no scan.
    at: dict[tuple[str, ...], list[int]] = {}
    for index, token in enumerate(tokens):
        at.setdefault((token.word,), []).append(index)
        if index + 1 < len(tokens):
            at.setdefault((token.word, tokens[index + 1].word), []).append(index)
    windows = _windows(_capitalised_phrases(text, tokens))
    finding = ProseFinding()
    for entity in entities:
        labels = [_label_parts(label) for label in entity.names]
        if any(_named(text, tokens, at, *parts) for parts in labels):
            finding.mentioned.append(entity)
            continue
        seen = _lookalike(windows, [parts[0] for parts in labels])
        if seen is not None:
            finding.lookalikes.append(Lookalike(entity, seen))
    return finding


def _named(
    text: str,
    tokens: list[_Token],
    at: dict[tuple[str, ...], list[int]],
    label_words: tuple[str, ...],
    gaps: tuple[str, ...],
) -> bool:
    if not label_words:
        return False
    size = len(label_words)
    for first in at.get(label_words[:2], ()):
        span = tokens[first : first + size]
        if len(span) < size or any(t.word != w for t, w in zip(span, label_words, strict=True)):
            continue
        if not all(
            _gap_fits(text[left.end : right.start], gap)
            for left, right, gap in zip(span[:-1], span[1:], gaps, strict=True)
        ):
            continue
        if (
            _stands_alone(text, span[0].start, span[-1].end)
            and _case_fits(text[span[0].start : span[0].end], label_words)
            and not (size == 1 and _starts_longer_name(text, tokens, first))
        ):
            return True
    return False


def _starts_longer_name(text: str, tokens: list[_Token], index: int) -> bool:
    """Whether the one-word label at `index` is followed by a capitalised word: the first name
    of a longer one ("Mark" in "Mark Chenowith")."""
    if index + 1 >= len(tokens) or text[tokens[index].end : tokens[index + 1].start] != " ":
        return False
    following = text[tokens[index + 1].start : tokens[index + 1].end]
    return following[:1].isupper() and len(following) > 1


def _gap_fits(written: str, gap: str) -> bool:
    if _WHITE.fullmatch(written):
        return True
    return bool(gap) and written in {gap, gap.replace("'", _QUOTE), gap.replace(_QUOTE, "'")}


def _stands_alone(text: str, start: int, end: int) -> bool:
    before_start = start
    while before_start > 0 and not text[before_start - 1].isspace():
        before_start -= 1
    after_end = end
    while after_end < len(text) and not text[after_end].isspace():
        after_end += 1
    return bool(
        _OPENING.fullmatch(text[before_start:start]) and _CLOSING.fullmatch(text[end:after_end])
    )


def _case_fits(written: str, label_words: tuple[str, ...]) -> bool:
    if len(label_words) > 1 or label_words[0] not in COMMON_WORDS:
        return True
    return written[:1].isupper() and (len(written) == 1 or not written.isupper())


def _capitalised_phrases(text: str, tokens: list[_Token]) -> list[list[tuple[str, str]]]:
    """Runs of capitalised words separated by single spaces: [(folded, as written)…] each."""
    runs: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    previous: _Token | None = None
    for token in tokens:
        written = text[token.start : token.end]
        capitalised = written[:1].isupper() and len(written) > 1
        joined = previous is not None and text[previous.end : token.start] in {" ", "-"}
        if capitalised and current and joined:
            current.append((token.word, written))
        elif capitalised:
            if current:
                runs.append(current)
            current = [(token.word, written)]
        elif current:
            runs.append(current)
            current = []
        previous = token
    if current:
        runs.append(current)
    return runs


# Windows of the capitalised phrases, by (number of words, first letter): each a tuple of folded
# words mapped to the words as written (the first place they occur).
_Windows = dict[tuple[int, str], dict[tuple[str, ...], str]]


def _windows(phrases: list[list[tuple[str, str]]]) -> _Windows:
    windows: _Windows = {}
    for run in phrases:
        for size in range(1, len(run) + 1):
            for start in range(len(run) - size + 1):
                window = run[start : start + size]
                folded = tuple(word for word, _ in window)
                bucket = windows.setdefault((size, folded[0][:1]), {})
                bucket.setdefault(folded, " ".join(shown for _, shown in window))
    return windows


def _lookalike(windows: _Windows, labels: list[tuple[str, ...]]) -> str | None:
    for label_words in labels:
        size = len(label_words)
        if not label_words or (size == 1 and len(label_words[0]) < LOOKALIKE_LENGTH):
            continue
        for written, shown in windows.get((size, label_words[0][:1]), {}).items():
            if _close(written, label_words):
                return shown
    return None


def _close(written: tuple[str, ...], label_words: tuple[str, ...]) -> bool:
    if written == label_words or written[0][:1] != label_words[0][:1]:
        return False
    if len(label_words) > 1 and written[0] == label_words[0]:
        return True  # the same first name, another surname
    if any(mine[:1] != theirs[:1] for mine, theirs in zip(written, label_words, strict=True)):
        return False
    limit = 1 if len(label_words) == 1 else 2
    distance = 0
    for word, label_word in zip(written, label_words, strict=True):
        distance += _edit_distance(word, label_word, limit - distance)
        if distance > limit:
            return False
    return True


def _edit_distance(left: str, right: str, limit: int) -> int:
    """Levenshtein distance, or `limit + 1` as soon as it is known to exceed `limit`."""
    if abs(len(left) - len(right)) > limit:
        return limit + 1
    row = list(range(len(right) + 1))
    for i, a in enumerate(left, 1):
        previous, row[0] = row[0], i
        for j, b in enumerate(right, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (a != b))
        if min(row) > limit:
            return limit + 1
    return row[-1]
