"""`memoryd rewrite` and `memoryd explain` through the real command line (markers provider)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.support.rewrite import Planted, plant

from memoryd.cli import main
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.catalog import EntityCatalog
from memoryd.store.layout import init_store
from memoryd.worktree import UnitOfWork


@pytest.fixture
def config(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    init_store(store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    # "Today" is the real date here (the CLI reads the clock), so ages are relative to it.
    today = datetime.now(UTC).date()
    plant(store, [Planted("Jane Doe", "Joined Acme as CTO", age=0)], today=today)
    path = tmp_path / "memoryd.toml"
    path.write_text(
        f'[store]\npath = "{store}"\n[state]\npath = "{tmp_path / "state"}"\n'
        '[llm]\nprovider = "markers"\n[budget]\ndaily_usd = 0\n',
        encoding="utf-8",
    )
    return path


def test_rewrite_dry_run_then_run_then_explain(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(config), "rewrite", "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["selected"] == ["people/jane-doe"] and plan["mode"] == "template"
    assert main(["--config", str(config), "rewrite"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rewrite ok: 1 summary, 0 archived (template: markers provider)")
    assert main(["--config", str(config), "explain", "jane-doe-001"]) == 0
    explained = capsys.readouterr().out
    assert "HOT" in explained and "cited in the summary" in explained
    assert main(["--config", str(config), "rewrite"]) == 0
    assert capsys.readouterr().out.startswith("rewrite nothing-to-do: 0 summaries")


def test_explain_of_an_unknown_target_is_a_usage_error(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(config), "explain", "nobody-001"]) == 2
    assert "is no fact id, ref, slug, name or alias" in capsys.readouterr().err


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    """A store where "Mercury" is both a person and a project, and Jane Doe has an alias."""
    store = tmp_path / "crowded"
    init_store(store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    today = datetime.now(UTC).date()
    plant(
        store,
        [
            Planted("Dana Whitfield", "Runs the Lisbon office", age=0),
            Planted("Mercury", "Plays bass", age=0),
            Planted("Mercury", "Ships in May", age=0, kind="project"),
        ],
        today=today,
    )
    git = GitStore(store, GitIdentity("memoryd", "memoryd@localhost"), None)
    uow = UnitOfWork(git)
    catalog = EntityCatalog.load(uow)
    dana = catalog.by_ref("people/dana-whitfield")
    assert dana is not None
    catalog.add_aliases(dana, ["DW"])
    uow.apply_and_commit("test: alias", {})
    path = tmp_path / "crowded.toml"
    path.write_text(
        f'[store]\npath = "{store}"\n[state]\npath = "{tmp_path / "state"}"\n'
        '[llm]\nprovider = "markers"\n[budget]\ndaily_usd = 0\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "target",
    [
        "Dana Whitfield",
        "dana whitfield",
        "DW",
        "dana-whitfield",
        "people/dana-whitfield",
        "person/dana-whitfield",
    ],
)
def test_explain_takes_a_name_an_alias_a_slug_or_a_ref(
    crowded: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(crowded), "explain", target]) == 0
    out = capsys.readouterr().out
    assert out.startswith("people/dana-whitfield (Dana Whitfield): 1 active fact,")
    assert "Runs the Lisbon office" in out


def test_explain_of_a_fact_id_points_at_its_entity(
    crowded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(crowded), "explain", "dana-whitfield-001"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "people/dana-whitfield (Dana Whitfield)"
    assert out[1].startswith("dana-whitfield-001: HOT")
    assert out[-1] == "(all of its facts: memoryd explain people/dana-whitfield)"


def test_explain_of_an_ambiguous_name_lists_the_candidates(
    crowded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(crowded), "explain", "Mercury"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "names 2 entities" in captured.err
    assert "people/mercury (Mercury)" in captured.err
    assert "projects/mercury" in captured.err


def test_explain_of_a_misspelt_name_suggests_the_close_one(
    crowded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(crowded), "explain", "Dana Whitfeld"]) == 2
    err = capsys.readouterr().err
    assert "did you mean people/dana-whitfield (Dana Whitfield)" in err
    assert main(["--config", str(crowded), "explain", "companies/dana-whitfield"]) == 2
