"""Find which labels (entity names and aliases) occur in a text, as whole words.

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

from memoryd.store.text import words

Key = TypeVar("Key", bound=Hashable)
_REMEMBERED = 32  # texts whose answers `find` keeps


@dataclass
class _Node(Generic[Key]):
    children: dict[str, _Node[Key]] = field(default_factory=dict)
    keys: set[Key] = field(default_factory=set)  # keys of labels ending at this word


@dataclass
class LabelMatcher(Generic[Key]):
    """Labels (as word sequences) mapped to the keys they stand for."""

    _root: _Node[Key] = field(default_factory=_Node)
    # What `find` answered for the last texts, kept up to date as labels are added. A chunk
    # sent ahead has its context built again after every chunk applied
    # (`memoryd.extractors.ahead`).
    _found: dict[str, tuple[tuple[str, ...], frozenset[Key]]] = field(default_factory=dict)

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
            node = node.children.setdefault(word, _Node())
        node.keys.add(key)

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
                child = node.children.get(tokens[position])
                if child is None:
                    break
                found |= child.keys
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


# -- as JSON (`memoryd.store.catalog_snapshot` keeps the catalogue's matcher between runs) ------


def matcher_document(matcher: LabelMatcher[str]) -> list[Any]:
    """The matcher's trie as JSON-ready nested lists, `[children, keys]` per node."""
    return _node_document(matcher._root)


def matcher_from_document(document: Any) -> LabelMatcher[str]:
    """The matcher `matcher_document` described. Raise ValueError when it is not one."""
    return LabelMatcher(_root=_node_from(document))


def matcher_keys(matcher: LabelMatcher[str]) -> set[str]:
    """Every key the matcher's labels stand for."""
    keys: set[str] = set()
    nodes = [matcher._root]
    while nodes:
        node = nodes.pop()
        keys |= node.keys
        nodes.extend(node.children.values())
    return keys


def _node_document(node: _Node[str]) -> list[Any]:
    return [
        {word: _node_document(child) for word, child in node.children.items()},
        sorted(node.keys),
    ]


def _node_from(document: Any) -> _Node[str]:
    shaped = (
        isinstance(document, list)
        and len(document) == 2
        and isinstance(document[0], dict)
        and isinstance(document[1], list)
        and all(isinstance(key, str) for key in document[1])
    )
    if not shaped:
        raise ValueError("not a node of a label trie")
    children, keys = document
    return _Node({str(word): _node_from(child) for word, child in children.items()}, set(keys))
