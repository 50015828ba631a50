"""How `memoryd search` reads a query: agents ask in sentences ("What are Alice's plans?"), so
the words that carry no meaning of their own are dropped and each remaining word is looked up
stemmed (the index's tokenizer is Porter's stemmer over unicode61, so "planning" finds "plans").

Ranking rewards covering more of the question: an entry's BM25 score (which already weighs each
word by its rarity) is multiplied by `coverage_factor`, which grows with the share of the
question's words the entry contains. An entry with every word is not required (a question
always has words the answer does not repeat), and one with a single rare word still ranks.
"""

from __future__ import annotations

import re
from typing import Final

_WORD = re.compile(r"\w+", re.UNICODE)
COVERAGE_WEIGHT: Final = 3.0

# English function words and question words: what a question is made of besides its subject.
STOP_WORDS: Final = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just let me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom whose why will with would you
    your yours yourself yourselves s t d ll m re ve don doesn didn isn aren wasn weren won
    wouldn shouldn couldn ever also tell know anything something thing things much many may
    might must shall yes kind sort ago yet still already please
    """.split()  # noqa: SIM905 (a list of words, read as prose)
)


def question_terms(query: str) -> list[str]:
    """The distinct words of `query` to look up, lower case, in order: its stop words left out,
    unless it is nothing but stop words (then all of them)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))
    kept = [word for word in words if word not in STOP_WORDS]
    return kept or words


def any_of(terms: list[str]) -> str:
    """An FTS5 query matching an entry with any of `terms` (each quoted: no operator syntax)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def coverage_factor(matched: int, total: int) -> float:
    """What an entry's score is multiplied by when it contains `matched` of the question's
    `total` words: 1 + COVERAGE_WEIGHT x the share, squared so that the last words count most."""
    share = matched / total if total else 0.0
    return 1.0 + COVERAGE_WEIGHT * share * share
