"""The reconcile verdict: what reconciling would do to a state database, decided without doing
it, and `memoryd check` saying the same as the job it predicts."""

from __future__ import annotations

import argparse
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.cli.check import cmd_check
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.jobs.reconcile import BINDING_KEY, reconcile_state, reconcile_verdict
from memoryd.settings import LoadedConfig, parse_settings
from memoryd.state.facade import DATABASE_FILE_NAME, State
from memoryd.store.layout import init_store, store_identity

HOST = "host-a"
STORE = "store-1"


@pytest.mark.parametrize(
    ("binding", "generation", "had_data", "stored", "expected"),
    [
        ({"host": HOST, "store": STORE}, "3", False, 3, ("in-step", None)),
        ({"host": HOST, "store": STORE}, "2", False, 3, ("in-step", "behind")),
        ({"host": HOST, "store": STORE}, "4", False, 3, ("in-step", "ahead")),
        ({"host": HOST, "store": None}, "3", False, 3, ("rebound", None)),
        ({"host": "old-name", "store": STORE}, "1", False, 3, ("renamed", None)),
        ({"host": HOST, "store": "store-2"}, "3", False, 3, ("foreign", "foreign")),
        # Bound before the store's first commit, but under another host: not this host's cache.
        ({"host": "host-b", "store": None}, "3", False, 3, ("foreign", "foreign")),
        (None, None, True, 3, ("adopted", None)),
        (None, None, False, 3, ("bound", "missing")),
        (None, None, False, 0, ("bound", None)),
    ],
)
def test_the_verdict(
    binding: object,
    generation: str | None,
    had_data: bool,
    stored: int,
    expected: tuple[str, str | None],
) -> None:
    verdict = reconcile_verdict(
        binding, generation, identity=STORE, host=HOST, stored=stored, had_data=had_data
    )
    assert (verdict.identity, verdict.rebuild) == expected


def test_check_warns_of_the_state_reconcile_would_forget(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    with State.open(state_dir / DATABASE_FILE_NAME) as state:
        # Bound before the store's first commit, by another host.
        state.meta.set_json(BINDING_KEY, {"host": "host-b", "store": None})
    settings = parse_settings(
        {
            "store": {"path": str(store)},
            "state": {"path": str(state_dir), "host": HOST},
            "llm": {"provider": "markers"},
        }
    )
    out = io.StringIO()
    cmd_check(
        argparse.Namespace(online=False), LoadedConfig(tmp_path / "x.toml", settings), {}, out
    )

    assert "is the state of another store or host" in out.getvalue()
    git = GitStore(store, GitIdentity("memoryd", "memoryd@localhost"), None)
    assert store_identity(git) is not None
    with State.open(state_dir / DATABASE_FILE_NAME) as state:
        at = datetime(2026, 3, 10, tzinfo=UTC)
        assert reconcile_state(state, git, HOST, at) == "rebuilt:foreign"
