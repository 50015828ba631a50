"""Find which labels (entity names and aliases) occur in a text, as whole words; and the forms
of an entity's labels that the catalogue's lookup tables index (`label_forms`).

Built once per catalogue and queried per chunk of conversation, so it must stay fast with
thousands of labels, many sharing their first words ("Client 0042 Holdings", "Client 0043
Holdings"…). Labels are stored in a trie of words; the text is split into words once, and from
each word the trie is walked only as far as the text keeps matching. The cost is the number of
words in the text times the length of the longest matching label — independent of how many
labels there are, and never one regex per label.

Words are compared folded (accents and case), so "José" in a label matches "jose" in the text.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from memoryd.charsafe import skeleton
from memoryd.store.entities import Entity, normalize_name
from memoryd.store.text import words

Key = TypeVar("Key", bound=Hashable)
_REMEMBERED = 32  # texts whose answers `find` keeps
# What the lookup tables index for one label: its normalized name, its look-alike skeleton, its
# words and its normalized name's words (`label_forms`; a cache may keep them).
LabelForms = tuple[str, str, tuple[str, ...], tuple[str, ...]]


# A node of the trie: [children by word, keys of the labels ending at this word]. Plain lists
# and dicts, so that the catalogue's snapshot (`memoryd.store.catalog._snapshot`) saves and
# loads the trie as it is, without a step per node.
_Node = list[Any]


def _new_node() -> _Node:
    return [{}, []]


@dataclass
class LabelMatcher(Generic[Key]):
    """Labels (as word sequences) mapped to the keys they stand for."""

    _root: _Node = field(default_factory=_new_node)
    # What `find` answered for the last texts, kept up to date as labels are added. A chunk
    # sent ahead has its context built again after every chunk applied
    # (`memoryd.heartbeat.ahead`).
    _found: dict[str, tuple[tuple[str, ...], frozenset[Key]]] = field(default_factory=dict)

    @property
    def trie(self) -> list[Any]:
        """The labels' word trie as the matcher holds it, for the catalogue's snapshot."""
        return self._root

    @classmethod
    def from_trie(cls, trie: list[Any]) -> LabelMatcher[Key]:
        """A matcher over a trie `trie` gave (the snapshot read back)."""
        return cls(_root=trie)

    def add(self, label: str, key: Key) -> None:
        """Register `label` as a way of mentioning `key`. A label without words is ignored."""
        self.add_words(words(label), key)

    def add_words(self, sequence: Sequence[str], key: Key) -> None:
        """`add` for a label already split by `memoryd.store.text.words`."""
        if not sequence:
            return
        # The remembered answers stay right: only the new label can add to them.
        for text, (tokens, known) in self._found.items():
            if key not in known and _occurs(tuple(sequence), tokens):
                self._found[text] = (tokens, known | {key})
        node = self._root
        for word in sequence:
            node = node[0].setdefault(word, [{}, []])
        if key not in node[1]:
            node[1].append(key)

    def remove_words(self, sequence: Sequence[str], key: Key) -> None:
        """Undo `add_words(sequence, key)`: the trie is left as if that label had never been
        added for `key` (nodes no label ends at or passes through any more are removed)."""
        path = [self._root]
        for word in sequence:
            child = path[-1][0].get(word)
            if child is None:
                return
            path.append(child)
        if len(path) == 1 or key not in path[-1][1]:
            return
        path[-1][1].remove(key)
        self._prune(list(sequence))
        self._found.clear()  # remembered answers may name the key

    def _prune(self, sequence: list[str]) -> None:
        while sequence:
            node = self._root
            for word in sequence[:-1]:
                node = node[0][word]
            last = node[0][sequence[-1]]
            if last[0] or last[1]:
                return
            del node[0][sequence[-1]]
            sequence.pop()

    def find(self, text: str) -> set[Key]:
        """Keys whose labels occur in `text` as whole words (case- and accent-insensitive)."""
        remembered = self._found.get(text)
        if remembered is None:
            if len(self._found) >= _REMEMBERED:
                self._found.clear()
            tokens = tuple(words(text))
            remembered = self._found[text] = (tokens, frozenset(self._walk(tokens)))
        return set(remembered[1])

    def _walk(self, tokens: tuple[str, ...]) -> set[Key]:
        found: set[Key] = set()
        for start in range(len(tokens)):
            node = self._root
            for position in range(start, len(tokens)):
                child = node[0].get(tokens[position])
                if child is None:
                    break
                found.update(child[1])
                node = child
        return found


def _occurs(sequence: tuple[str, ...], tokens: tuple[str, ...]) -> bool:
    """Whether `sequence` occurs in `tokens` as consecutive words."""
    first, size = sequence[0], len(sequence)
    start = 0
    while True:
        try:
            start = tokens.index(first, start)
        except ValueError:
            return False
        if tokens[start : start + size] == sequence:
            return True
        start += 1


def label_forms(entity: Entity) -> list[LabelForms]:
    """What the lookup tables index for each of the entity's names (name first, then aliases)."""
    forms = []
    for label in entity.names:
        normalized = normalize_name(label)
        forms.append((normalized, label_look(label), tuple(words(label)), tuple(words(normalized))))
    return forms


def label_look(label: str) -> str:
    """What a label looks like: its normalized name after confusable folding."""
    return normalize_name(skeleton(label))
