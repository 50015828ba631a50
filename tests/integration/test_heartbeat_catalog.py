"""The entity catalogue across heartbeats: taken whole from its snapshot while only memoryd's
heartbeats committed, and only the folders a person edited read again after that
(`memoryd.store.catalog._snapshot`)."""

from __future__ import annotations

import gc
import json
from dataclasses import replace
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.support.harness import Workspace, turn

from memoryd.errors import EXIT_OK
from memoryd.jobs.heartbeat import run_heartbeat


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


def _remember(ws: Workspace, name: str, line: str, when: str) -> int | None:
    """One heartbeat filing `line`; how many entity folders its catalogue read again on top of
    the snapshot (None: no snapshot, the catalogue was read entity by entity)."""
    ws.write_log(name, [turn("user", line, when)])
    with capture_logs() as logs:
        report = ws.heartbeat(ws.settings("markers"))
    assert report.exit_code == EXIT_OK
    loaded = [e["reread"] for e in logs if e["event"] == "store.catalog_snapshot_loaded"]
    return loaded[0] if loaded else None


def test_the_snapshot_serves_memoryds_own_commits_and_yields_to_a_persons_edit(
    ws: Workspace,
) -> None:
    assert (
        _remember(ws, "a.jsonl", "remember: person Jane Doe: CTO", "2026-03-01T09:00:00Z") is None
    )
    assert _remember(ws, "b.jsonl", "remember: company Globex: Client", "2026-03-02T09:00:00Z") == 0

    # A person gives Jane an alias and leaves it uncommitted: the heartbeat commits it first,
    # so HEAD is no longer the snapshot's commit; Jane's folder alone is read again, and the
    # alias resolves.
    metadata = ws.store / "life/areas/people/jane-doe/entity.json"
    document = json.loads(metadata.read_text())
    document["aliases"] = ["JD"]
    metadata.write_text(json.dumps(document, indent=2) + "\n")
    assert (
        _remember(ws, "c.jsonl", "remember: person JD: Moved to Berlin", "2026-03-03T09:00Z") == 1
    )
    facts = ws.facts("life/areas/people/jane-doe")
    assert [fact["fact"] for fact in facts] == ["CTO", "Moved to Berlin"]
    assert not (ws.store / "life/areas/people/jd").exists()

    # The next heartbeat is served by the snapshot again, and still knows the alias.
    assert (
        _remember(ws, "d.jsonl", "remember: person JD: Leads hiring", "2026-03-04T09:00:00Z") == 0
    )
    assert [fact["fact"] for fact in ws.facts("life/areas/people/jane-doe")][-1] == "Leads hiring"


def test_the_heartbeat_keeps_its_catalogue_out_of_the_collectors_passes_until_it_ends(
    ws: Workspace,
) -> None:
    settings = ws.settings("markers")
    ws.write_log("a.jsonl", [turn("user", "remember: person Jane Doe: CTO", "2026-03-01T09:00Z")])
    run_heartbeat(settings, ws.environment())
    ws.write_log("b.jsonl", [turn("user", "remember: company Globex: Client", "2026-03-02T09:00Z")])
    frozen: list[int] = []
    with capture_logs() as logs:
        report = run_heartbeat(
            settings, ws.environment(), progress=lambda _: frozen.append(gc.get_freeze_count())
        )
    assert report.exit_code == EXIT_OK
    assert [e["reread"] for e in logs if e["event"] == "store.catalog_snapshot_loaded"] == [0]
    assert frozen and frozen[0] > 0  # the snapshot's load froze what it built (memoryd.collector)
    assert gc.get_freeze_count() == 0  # and the heartbeat's end gave it all back


@pytest.mark.parametrize("daemon", [True, False])
def test_the_daemons_heartbeats_hand_their_catalogue_to_the_next_and_a_one_shot_keeps_none(
    ws: Workspace, daemon: bool
) -> None:
    """The daemon's environment (`long_lived`) keeps each heartbeat's catalogue for its next
    heartbeat, which then reads no snapshot file; a person's edit in between is still
    followed. A one-shot command's heartbeats read the files every time."""
    settings = ws.settings("markers")
    env = replace(ws.environment(), long_lived=daemon)
    lines = [
        ("person Jane Doe: CTO", None),
        ("company Globex: Client", None),
        ("person JD: Moved to Berlin", "JD"),  # after a person gave Jane the alias
        ("person JD: Leads hiring", None),
    ]
    loads = []
    for day, (line, alias) in enumerate(lines, start=1):
        if alias:
            metadata = ws.store / "life/areas/people/jane-doe/entity.json"
            document = json.loads(metadata.read_text())
            document["aliases"] = [alias]
            metadata.write_text(json.dumps(document, indent=2) + "\n")
        when = f"2026-03-0{day}T09:00:00Z"
        ws.write_log(f"{day}.jsonl", [turn("user", f"remember: {line}", when)])
        with capture_logs() as logs:
            report = run_heartbeat(settings, env)
        assert report.exit_code == EXIT_OK
        loads += [
            (e["kept"], e["reread"]) for e in logs if e["event"] == "store.catalog_snapshot_loaded"
        ]
    assert loads == [(daemon, 0), (daemon, 1), (daemon, 0)]
    facts = [fact["fact"] for fact in ws.facts("life/areas/people/jane-doe")]
    assert facts == ["CTO", "Moved to Berlin", "Leads hiring"]
    assert not (ws.store / "life/areas/people/jd").exists()
