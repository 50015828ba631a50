"""Reprocess requests: history an operator asked to be read again (`memoryd reprocess`).

A request is one JSON file in the store, `.memoryd/reprocess/<id>.json`, committed by the
command that made it (trailer `Memoryd-Reprocess: <id>`) and moved on by the heartbeats that
read it, each in the same commit as the memories that reading produced. Being in the store, a
request survives the loss of the state database and travels with the store: a request is read
only by the host that made it (`host`), and once `done` by no one, so that neither another host
nor a rebuilt state database runs it twice.

A request names what is read again (`agent`, `source`, `since`, `until`: None for "all"), when
it was made (`requested`: only history written before that instant is read again; what came
after is the normal heartbeats' business), and how far it got:

    pending   recorded; no heartbeat has read it yet
    reading   a heartbeat read part of it; `resume_from` is the instant of the first
              conversation turn not filed yet (earlier ones are not read again)
    done      every chunk of it was filed (or quarantined); `finished` names the run

Rendering is deterministic (sorted keys, two-space indent, trailing newline).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any, Final, Literal

from memoryd.errors import CorruptFileError
from memoryd.worktree import FileTransaction

REPROCESS_DIR: Final = ".memoryd/reprocess"
REPROCESS_TRAILER: Final = "Memoryd-Reprocess"
REQUEST_FORMAT: Final = 1

RequestState = Literal["pending", "reading", "done"]
_STATES: Final = ("pending", "reading", "done")
_ID = re.compile(r"^[0-9a-f]{8,32}$")


@dataclass(frozen=True)
class ReprocessRequest:
    """History to be read again by the following heartbeats of `host`."""

    id: str
    host: str
    requested: datetime  # aware; history written after it is not read again
    agent: str | None = None
    source: str | None = None  # a configured source path, as configured
    since: date | None = None  # first day read again (in `schedule.timezone`), inclusive
    until: date | None = None  # last day read again, inclusive
    state: RequestState = "pending"
    resume_from: datetime | None = None  # while reading: turns before it are filed
    finished: str | None = None  # the run that filed its last chunk

    @property
    def path(self) -> str:
        return request_path(self.id)

    @property
    def active(self) -> bool:
        return self.state != "done"

    def covers(self, agent: str, source_path: str) -> bool:
        """Whether the request reads again the source `source_path` of `agent`."""
        return (self.agent is None or self.agent == agent) and (
            self.source is None or self.source == source_path
        )

    def selects(self, day: date, at: datetime) -> bool:
        """Whether a turn of local day `day`, written at `at`, is read again (and not filed
        yet by an earlier heartbeat of this request)."""
        if self.since is not None and day < self.since:
            return False
        if self.until is not None and day > self.until:
            return False
        if self.resume_from is not None and at < self.resume_from:
            return False
        return at <= self.requested

    def to_json(self) -> dict[str, Any]:
        return {
            "format": REQUEST_FORMAT,
            "id": self.id,
            "host": self.host,
            "requested": self.requested.isoformat(),
            "agent": self.agent,
            "source": self.source,
            "since": None if self.since is None else self.since.isoformat(),
            "until": None if self.until is None else self.until.isoformat(),
            "state": self.state,
            "resume_from": None if self.resume_from is None else self.resume_from.isoformat(),
            "finished": self.finished,
        }


def request_path(request_id: str) -> str:
    return f"{REPROCESS_DIR}/{request_id}.json"


def is_request_id(text: str) -> bool:
    return bool(_ID.match(text))


def render_request(request: ReprocessRequest) -> str:
    return json.dumps(request.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def parse_request(text: str) -> ReprocessRequest:
    """The request a file holds. Raise ValueError (or KeyError/TypeError) if it is not one."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise TypeError("a reprocess request is a JSON object")
    if data.get("format") != REQUEST_FORMAT:
        raise ValueError(f"unknown reprocess request format {data.get('format')!r}")
    state = data["state"]
    if state not in _STATES:
        raise ValueError(f"unknown state {state!r}")
    requested = datetime.fromisoformat(data["requested"])
    if requested.tzinfo is None:
        raise ValueError("requested is not an aware instant")
    request_id = str(data["id"])
    if not is_request_id(request_id):
        raise ValueError(f"bad request id {request_id!r}")
    return ReprocessRequest(
        id=request_id,
        host=str(data["host"]),
        requested=requested,
        agent=_optional_text(data.get("agent")),
        source=_optional_text(data.get("source")),
        since=_optional_day(data.get("since")),
        until=_optional_day(data.get("until")),
        state=state,
        resume_from=_optional_instant(data.get("resume_from")),
        finished=_optional_text(data.get("finished")),
    )


def list_requests(tx: FileTransaction) -> list[ReprocessRequest]:
    """Every request in the store, oldest first. Raise CorruptFileError, naming the file, for
    one that does not parse (it is never overwritten)."""
    requests = []
    for entry in tx.list_dir(REPROCESS_DIR):
        if not entry.endswith(".json"):
            continue
        path = f"{REPROCESS_DIR}/{entry}"
        text = tx.read_text(path)
        if text is None:
            continue
        try:
            requests.append(parse_request(text))
        except (ValueError, KeyError, TypeError) as error:
            raise CorruptFileError(tx.root / path, str(error)) from None
    return sorted(requests, key=lambda r: (r.requested, r.id))


def active_requests(tx: FileTransaction, host: str) -> list[ReprocessRequest]:
    """The requests of `host` not done yet, oldest first."""
    return [r for r in list_requests(tx) if r.host == host and r.active]


def write_request(tx: FileTransaction, request: ReprocessRequest) -> None:
    tx.write_text(request.path, render_request(request))


def progressed(
    request: ReprocessRequest, *, resume_from: datetime | None, run_id: str
) -> ReprocessRequest:
    """The request after a heartbeat read it: done when nothing is left (`resume_from` None),
    else reading from `resume_from` on."""
    if resume_from is None:
        return replace(request, state="done", resume_from=None, finished=run_id)
    return replace(request, state="reading", resume_from=resume_from)


def _optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def _optional_day(value: object) -> date | None:
    return None if value is None else date.fromisoformat(str(value))


def _optional_instant(value: object) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))
