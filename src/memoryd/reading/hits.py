"""A search hit, and the recency weight it is ranked with (`memoryd.reading.search`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from memoryd.store.tiers import Tier, TierRule, classify

WEIGHTS: Final[dict[str, float]] = {"hot": 1.0, "warm": 0.85, "cold": 0.7, "inactive": 0.5}


@dataclass(frozen=True)
class Hit:
    kind: str
    id: str
    ref: str | None
    path: str
    line: int
    text: str
    status: str | None
    tier: str  # hot, warm, cold, or inactive (superseded or retracted)
    score: float
    entity: str | None = None  # the name of the entity of a fact or summary line
    date: str | None = None  # a fact's date, a note's day (ISO); None for the other kinds

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "id": self.id,
            "ref": self.ref,
            "path": self.path,
            "line": self.line,
            "text": self.text,
            "status": self.status,
            "tier": self.tier,
            "score": round(self.score, 6),
            "entity": self.entity,
            "date": self.date,
        }


def hit_of(fields: Sequence[Any], score: float, today: date, rule: TierRule) -> Hit:
    kind, id_, ref, path, line, text, status, last_used, uses, entity, day, _ = fields
    tier = tier_of(kind, status, last_used, uses, today=today, rule=rule)
    return Hit(kind, id_, ref, path, line, text, status, tier, score * WEIGHTS[tier], entity, day)


def tier_of(
    kind: str, status: str | None, last_used: str | None, uses: int, *, today: date, rule: TierRule
) -> str:
    if kind == "fact" and status != "active":
        return "inactive"
    if last_used is None:
        return "warm"
    tier: Tier = classify(date.fromisoformat(last_used), uses, today, rule)[0]
    return tier
