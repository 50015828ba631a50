"""Find which labels (entity names and aliases) occur in a text, as whole words.

Built once per catalogue state and queried per chunk of conversation, so it must stay fast with
thousands of labels: labels are indexed by their first word, the text is split into words once,
and at each word only the labels starting with that word are compared. The cost is linear in the
length of the text times the (small) number of labels sharing a first word — never one regex per
label.

Words are compared folded (accents and case), so "José" in a label matches "jose" in the text.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from memoryd.store._text import words

Key = TypeVar("Key", bound=Hashable)


@dataclass
class MentionIndex(Generic[Key]):
    """Labels (as word sequences) mapped to the keys they stand for."""

    _by_first_word: dict[str, dict[tuple[str, ...], set[Key]]] = field(default_factory=dict)

    def add(self, label: str, key: Key) -> None:
        """Register `label` as a way of mentioning `key`. A label without words is ignored."""
        sequence = tuple(words(label))
        if not sequence:
            return
        by_sequence = self._by_first_word.setdefault(sequence[0], {})
        by_sequence.setdefault(sequence, set()).add(key)

    def add_all(self, labels: Iterable[str], key: Key) -> None:
        for label in labels:
            self.add(label, key)

    def find(self, text: str) -> set[Key]:
        """Keys whose labels occur in `text` as whole words (case- and accent-insensitive)."""
        tokens = words(text)
        found: set[Key] = set()
        for position, token in enumerate(tokens):
            candidates = self._by_first_word.get(token)
            if not candidates:
                continue
            for sequence, keys in candidates.items():
                end = position + len(sequence)
                if end <= len(tokens) and tuple(tokens[position:end]) == sequence:
                    found |= keys
        return found
