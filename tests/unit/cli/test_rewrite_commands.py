"""`memoryd rewrite` and `memoryd explain` through the real command line (markers provider)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.support.rewrite import Planted, plant

from memoryd.cli import main
from memoryd.store.layout import init_store


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
    assert "neither a fact id nor an entity ref" in capsys.readouterr().err
