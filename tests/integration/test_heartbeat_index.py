"""life/index.md after heartbeats: only what changed is read again, and the file stays what a
full regeneration gives (entities created, summaries refreshed, a person's edits)."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from tests.support.harness import Workspace, turn

from memoryd.errors import EXIT_OK
from memoryd.jobs.heartbeat import run_heartbeat
from memoryd.jobs.reading import search_index_folder, search_store
from memoryd.reading.search import SearchIndex
from memoryd.store.catalog import EntityCatalog
from memoryd.store.index import INDEX_PATH, render_index
from memoryd.worktree import StorePaths


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


def test_after_its_commit_a_heartbeat_refreshes_the_search_index_from_the_commits_files(
    ws: Workspace,
) -> None:
    config = ws.settings("markers")
    env = ws.environment()
    for day in range(1, 9):  # files the first refresh reads, and the later ones need not
        (ws.store / f"memory/2026-02-0{day}.md").write_text(f"# Day {day}\n\n- chess\n")
    ws.git("add", "-A")
    ws.git("commit", "-qm", "earlier notes")
    line = "remember: person Jane Doe: Plays chess"
    ws.write_log("a.jsonl", [turn("user", line, "2026-03-01T09:00:00Z")])
    with capture_logs() as logs:
        assert run_heartbeat(config, env).exit_code == EXIT_OK
    built = [e["files_read"] for e in logs if e["event"] == "search.refreshed"]
    assert built and built[0] > 8  # the first refresh builds the index whole

    # A person's hand edit, then a heartbeat: its commits hold the edit (a foreign edit) and
    # the heartbeat's own files; only those are read again, and the index is then current.
    summary = ws.store / "life/areas/people/jane-doe/summary.md"
    summary.write_text("# Jane Doe\n\nKnown for her bridge evenings\n")
    line = "remember: company Globex: Buys chess sets"
    ws.write_log("b.jsonl", [turn("user", line, "2026-03-02T09:00:00Z")])
    with capture_logs() as logs:
        assert run_heartbeat(config, env).exit_code == EXIT_OK
    read = [e["files_read"] for e in logs if e["event"] == "search.refreshed"]
    committed = set(ws.git("show", "--name-only", "--format=", "HEAD", "HEAD~1").split())
    assert read and read[0] <= len(committed) < built[0]
    with SearchIndex.open(search_index_folder(config, env), ws.store) as index:
        stats = index.refresh(
            tacit_file=config.store.tacit_file, skills_dir=config.store.skills_dir
        )
    assert (stats.files_read, stats.files_dropped) == (0, 0)
    hits = search_store(config, env, "bridge", agent="ops", record=False)
    assert [hit.path for hit in hits] == ["life/areas/people/jane-doe/summary.md"]


def test_a_summary_a_person_committed_shows_in_the_next_index(ws: Workspace) -> None:
    _remember(
        ws, "a.jsonl", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z"
    )
    summary = ws.store / "life/areas/people/jane-doe/summary.md"
    summary.write_text("# Jane Doe\n\nRuns engineering at Acme, committed by a person\n")
    ws.git("add", "-A")
    ws.git("commit", "-qm", "a person's own commit")

    _remember(ws, "b.jsonl", "remember: company Globex: Signed in March", "2026-03-02T09:00:00Z")
    index = ws.read(INDEX_PATH)
    assert "— Jane Doe: Runs engineering at Acme, committed by a person" in index
    assert index == _full_render(ws)


def test_an_index_another_commit_changed_is_checked_line_by_line(ws: Workspace) -> None:
    _remember(
        ws, "a.jsonl", "remember: person Jane Doe: Joined Acme as CTO", "2026-03-01T09:00:00Z"
    )
    _remember(ws, "b.jsonl", "remember: person Bob Roe: Runs sales", "2026-03-02T09:00:00Z")
    # Another host's older index, pulled: Bob's line is missing and Jane's names her wrongly.
    index = ws.store / INDEX_PATH
    lines = [
        line.replace("— Jane Doe:", "— Jane D.:")
        for line in index.read_text().splitlines()
        if "people/bob-roe" not in line
    ]
    index.write_text("\n".join(lines) + "\n")
    ws.git("commit", "-qam", "another host's index")

    _remember(ws, "c.jsonl", "remember: company Globex: Signed in March", "2026-03-03T09:00:00Z")
    assert ws.read(INDEX_PATH) == _full_render(ws)
