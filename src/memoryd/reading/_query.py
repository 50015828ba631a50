"""How `memoryd search` reads a query: agents ask in sentences ("What are Alice's plans?"), so
the words that carry no meaning of their own are dropped and each remaining word is looked up
stemmed (the index's tokenizer is Porter's stemmer over unicode61, so "planning" finds "plans").

Chinese, Japanese and Korean text has no spaces between its words, so the tokenizer would make a
whole run of it one term and a word inside a sentence could never be found: the index also
holds each CJK run's characters and their overlapping pairs (`cjk_grams`), and a query's CJK
words are looked up as those pairs (or the character, alone).

A query is bounded: only its first `MAX_QUERY_CHARS` characters are read and at most
`MAX_TERMS` distinct words looked up, so the work of any query is bounded whatever its length
(`QueryTerms.cut` says when the rest was not read).

Ranking rewards covering more of the question: an entry's BM25 score (which already weighs each
word by its rarity) is multiplied by `coverage_factor`, which grows with the share of the
question's words the entry contains. An entry with every word is not required (a question
always has words the answer does not repeat), and one with a single rare word still ranks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_WORD = re.compile(r"\w+", re.UNICODE)
# Han, kana, Hangul: scripts written without spaces between words.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
COVERAGE_WEIGHT: Final = 3.0
MAX_QUERY_CHARS: Final = 1000
MAX_TERMS: Final = 64

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


@dataclass(frozen=True)
class QueryTerms:
    terms: list[str]
    cut: bool  # the query was longer than what is read (`MAX_QUERY_CHARS`, `MAX_TERMS`)


def read_query(query: str) -> QueryTerms:
    """The distinct words of `query` to look up, lower case, in order: its stop words left out,
    unless it is nothing but stop words (then all of them); CJK runs as their character pairs.
    At most `MAX_TERMS` of the words in its first `MAX_QUERY_CHARS` characters: linear work."""
    head = query[:MAX_QUERY_CHARS]
    words: dict[str, None] = {}
    for word in _WORD.findall(head):
        for term in _split_cjk(word.lower()):
            words[term] = None
    kept = [word for word in words if word not in STOP_WORDS] or list(words)
    cut = len(query) > MAX_QUERY_CHARS or len(kept) > MAX_TERMS
    return QueryTerms(kept[:MAX_TERMS], cut)


def question_terms(query: str) -> list[str]:
    """The words of `query` to look up (`read_query`)."""
    return read_query(query).terms


def _split_cjk(word: str) -> list[str]:
    """`word`'s parts: each CJK run as its overlapping character pairs (a lone character as
    itself), the rest as they are."""
    if not _CJK.search(word):
        return [word]
    parts: list[str] = []
    position = 0
    for match in _CJK.finditer(word):
        if match.start() > position:
            parts.append(word[position : match.start()])
        run = match.group()
        parts += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        position = match.end()
    if position < len(word):
        parts.append(word[position:])
    return parts


def cjk_grams(text: str) -> str:
    """More terms for the index to hold of `text`: each CJK character and each pair of adjacent
    ones, space-separated ("" when it has none), so that a word inside a CJK sentence is found."""
    grams: list[str] = []
    for match in _CJK.finditer(text):
        run = match.group()
        grams += list(run)
        grams += [run[i : i + 2] for i in range(len(run) - 1)]
    return " ".join(grams)


def any_of(terms: list[str]) -> str:
    """An FTS5 query matching an entry with any of `terms` (each quoted: no operator syntax)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def coverage_factor(matched: int, total: int) -> float:
    """What an entry's score is multiplied by when it contains `matched` of the question's
    `total` words: 1 + COVERAGE_WEIGHT x the share, squared so that the last words count most."""
    share = matched / total if total else 0.0
    return 1.0 + COVERAGE_WEIGHT * share * share
