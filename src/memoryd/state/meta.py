"""A small key/value table for odds and ends that need no table of their own.

Examples: the last heartbeat's summary for `status`, the day `budget.exhausted` was last logged
(so it is logged once a day). Values are text; `get_json`/`set_json` store canonical JSON.
Keys are dotted names chosen by the caller; this module reserves one, `llm.unusable`:

The LLM's run-level problem (`memoryd.llm.base.UnusableLLMError`: a refused key, a retired
model, no credit, ...) is kept under `UNUSABLE_LLM_KEY` from the run that met it until a call
disproves it, so that `status` shows it between runs and the `llm.unusable` log line is repeated
at most once per `RELOG_INTERVAL` while it lasts. The record is the problem's own fields (kind,
remedy, endpoint, model, status, error_type, message, request_id) plus `since` (first seen),
`last_seen` and `logged_at` (ISO 8601, UTC), and for `invalid_answers` `streak_checked_at`: when
a whole streak of invalid answers last confirmed it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from memoryd.llm.base import ACCOUNT_KINDS
from memoryd.state._codec import canonical_json
from memoryd.state.db import StateDB

UNUSABLE_LLM_KEY = "llm.unusable"
RELOG_INTERVAL = timedelta(hours=1)
# The fields that tell one problem from another (a new request id is the same problem); the
# server's words count for a problem the server stated (one with an HTTP status), not for the
# validation errors of invalid answers, which vary from answer to answer.
_IDENTITY = ("kind", "endpoint", "model", "status", "error_type")


class Meta:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def get(self, key: str) -> str | None:
        value = self._db.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def delete(self, key: str) -> None:
        self._db.execute("DELETE FROM meta WHERE key = ?", (key,))

    def names(self, prefix: str = "") -> list[str]:
        """The keys that start with `prefix`, sorted."""
        rows = self._db.query(
            "SELECT key FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)
        )
        return [str(row["key"]) for row in rows]

    def get_json(self, key: str) -> Any:
        """Return the JSON value stored under `key`, or None when there is none."""
        text = self.get(key)
        return None if text is None else json.loads(text)

    def set_json(self, key: str, value: Any) -> None:
        self.set(key, canonical_json(value))


def unusable_llm(meta: Meta) -> dict[str, Any] | None:
    """The recorded run-level LLM problem, or None (see the module docstring)."""
    record = meta.get_json(UNUSABLE_LLM_KEY)
    return record if isinstance(record, dict) else None


def note_unusable_llm(
    meta: Meta, problem: Mapping[str, Any], now: datetime, *, streak_checked: bool = False
) -> bool:
    """Record `problem` (an `UnusableLLMError.problem()`) as seen at `now`.

    Return True when the operator should be told now: the problem is new or differs from the
    recorded one, or it was last logged `RELOG_INTERVAL` ago or more (the caller then logs it;
    `logged_at` is set to `now`). `streak_checked` records that a whole streak of invalid
    answers confirmed it.
    """
    at = now.astimezone(UTC).isoformat()
    old = unusable_llm(meta)
    identity = (*_IDENTITY, "message") if problem.get("status") is not None else _IDENTITY
    same = old is not None and all(old.get(name) == problem.get(name) for name in identity)
    record: dict[str, Any] = {**problem, "since": at, "last_seen": at, "logged_at": at}
    due = True
    if old is not None and same:
        record["since"] = old.get("since", at)
        logged = _parse(old.get("logged_at"))
        due = logged is None or now - logged >= RELOG_INTERVAL
        if not due:
            record["logged_at"] = old["logged_at"]
        if not streak_checked and "streak_checked_at" in old:
            record["streak_checked_at"] = old["streak_checked_at"]
    if streak_checked:
        record["streak_checked_at"] = at
    meta.set_json(UNUSABLE_LLM_KEY, record)
    return due


def clear_unusable_llm(meta: Meta, *, model: str, valid_answer: bool) -> dict[str, Any] | None:
    """A call asking for `model` was answered (validly or not): forget the recorded problem
    that answer disproves and return it, or None when nothing was cleared.

    Any answer disproves a refused key, a missing permission or no credit; an answer from
    `model` also disproves a problem with `model` (not found, too large); only a valid answer
    from it disproves `invalid_answers`.
    """
    record = unusable_llm(meta)
    if record is None:
        return None
    kind = record.get("kind")
    same_model = record.get("model") == model
    # Any answer means the call went through: key, account and endpoint work.
    if kind in ACCOUNT_KINDS or (same_model and (valid_answer or kind != "invalid_answers")):
        meta.delete(UNUSABLE_LLM_KEY)
        return record
    return None


def streak_checked_since(meta: Meta, *, model: str, endpoint: str | None) -> datetime | None:
    """When a whole streak of invalid answers from `model` at `endpoint` last confirmed that
    the model cannot do the task, or None when no such problem is recorded."""
    record = unusable_llm(meta)
    if record is None or record.get("kind") != "invalid_answers":
        return None
    if record.get("model") != model or record.get("endpoint") != endpoint:
        return None
    return _parse(record.get("streak_checked_at"))


def _parse(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
