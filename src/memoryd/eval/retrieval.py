"""`memoryd eval --retrieval`: the set's labelled questions asked of memoryd's search.

A question passes when one of the first ten hits contains its answer (every answer term, as
`memoryd.eval.labels.matches` compares, in the hit's text or its entity's name): answer
containment at 10. The reads are not recorded.
"""

from __future__ import annotations

from memoryd.eval.labels import Labels, matches
from memoryd.eval.score import Category
from memoryd.jobs.environment import Environment
from memoryd.jobs.reading import search_store
from memoryd.settings import Settings

HITS = 10


def _said(text: str, ref: str | None) -> str:
    """A hit as a reader sees it: its text and the entity it is about (`people/jane-doe`
    read as "people jane doe")."""
    return f"{text} {ref.replace('/', ' ').replace('-', ' ')}" if ref else text


def score_retrieval(settings: Settings, env: Environment, labels: Labels) -> Category:
    category = Category()
    for question in labels.questions:
        hits = search_store(
            settings, env, question.question, agent=question.agent, limit=HITS, record=False
        )
        found = any(matches(_said(hit.text, hit.ref), question.answer) for hit in hits)
        category.check(
            found, f"{question.question!r}: no hit of {HITS} holds {list(question.answer)}"
        )
    return category
