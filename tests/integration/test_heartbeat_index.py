"""life/index.md after heartbeats: only what changed is read again, and the file stays what a
full regeneration gives (entities created, summaries refreshed, a person's edits)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.integration.harness import Workspace, turn

from memoryd.errors import EXIT_OK
from memoryd.store.catalog import EntityCatalog
from memoryd.store.index import INDEX_PATH, render_index
from memoryd.store.paths import StorePaths


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path)
    workspace.init()
    return workspace


class _Reader:
    """A read-only FileTransaction over the store folder, enough to render the index."""

    def __init__(self, root: Path) -> None:
        self._paths = StorePaths(root)

    @property
    def root(self) -> Path:
        return self._paths.root

    def read_text(self, relative: str) -> str | None:
        path = self._paths.resolve(relative)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def exists(self, relative: str) -> bool:
        return self._paths.resolve(relative).exists()

    def list_dir(self, relative: str) -> list[str]:
        path = self._paths.resolve(relative)
        return sorted(entry.name for entry in path.iterdir()) if path.is_dir() else []


def _full_render(ws: Workspace) -> str:
    reader = _Reader(ws.store)
    return render_index(reader, EntityCatalog.load(reader))  # type: ignore[arg-type]


def _remember(ws: Workspace, name: str, line: str, when: str) -> None:
    ws.write_log(name, [turn("user", line, when)])
    report = ws.heartbeat(ws.settings("markers"))
    assert report.exit_code == EXIT_OK


def test_the_index_follows_new_entities_and_a_persons_summary_edit(ws: Workspace) -> None:
    _remember(
        ws, "a.jsonl", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z"
    )
    assert ws.read(INDEX_PATH) == _full_render(ws)
    summary = ws.store / "life/areas/people/jane-doe/summary.md"
    summary.write_text("# Jane Doe\n\nRuns engineering at Acme, edited by a person\n")

    # The next heartbeat commits the edit (a foreign edit) and files a new entity: Jane's line
    # follows the edit although memoryd changed nothing of hers.
    _remember(ws, "b.jsonl", "remember: company Globex: Signed in March", "2026-03-02T09:00:00Z")
    index = ws.read(INDEX_PATH)
    assert "— Jane Doe: Runs engineering at Acme, edited by a person" in index
    assert "[companies/globex]" in index
    assert index == _full_render(ws)
    assert ws.git("status", "--porcelain").strip() == ""
