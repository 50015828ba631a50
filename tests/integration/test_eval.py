"""`memoryd eval` end to end: the project's own set filed through the real SDK against the fake
Anthropic server, scored. Scripted ideal answers (written from the labels, not a model's) score
100%; scripted flawed answers lose exactly in the categories of their planted flaws; a recorded
strong model's answers, replayed by excerpt, must keep at least their recorded baseline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.fake_anthropic import FakeAnthropicServer
from tests.fakes.replay import recording_handler, replay_handler, user_text, write_baseline
from tests.support.cli import memoryd
from tests.support.eval_answers import FLAWED, IDEAL, scripted

pytestmark = pytest.mark.slow

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings" / "eval"


def _config(folder: Path, base_url: str, more: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "memoryd.toml"
    config.write_text(
        f"""
[store]
path = "operator-store"
[llm]
provider = "anthropic"
base_url = "{base_url}"
max_attempts = 1
concurrency = 1
{more}
[[agents]]
name = "ops"
  [[agents.sources]]
  format = "jsonl"
  path = "logs"
""",
        encoding="utf-8",
    )
    return config


def _eval(tmp_path: Path, server: FakeAnthropicServer, *args: str, code: int = 0) -> dict[str, Any]:
    config = _config(tmp_path, server.base_url)
    run = memoryd(
        "--config",
        str(config),
        "eval",
        "--json",
        *args,
        cwd=tmp_path,
        env={"ANTHROPIC_API_KEY": "test"},
    )
    assert not server.handler_errors, server.handler_errors
    assert run.returncode == code, run.stderr[-3000:]
    # The operator's store is never created, let alone written.
    assert not (tmp_path / "operator-store").exists()
    return dict(json.loads(run.stdout))


def _scores(card: dict[str, Any]) -> dict[str, float | None]:
    return {name: c["score"] for name, c in card["categories"].items()}


def test_ideal_answers_score_every_category_in_full(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=scripted(IDEAL)) as server:
        card = _eval(tmp_path, server, "--retrieval")
        tools = [r.body.get("tool_choice", {}).get("name") for r in server.message_requests]
    assert tools.count("record_memories") == 3
    assert "write_summary" in tools  # the summaries were asked for and scored
    failed = {n: c["problems"] for n, c in card["categories"].items() if c["problems"]}
    assert failed == {}
    assert card["categories"]["summaries"]["total"] >= 3
    assert card["categories"]["entities"]["precision"] == 1.0
    assert card["mean"] == 1.0


def test_flawed_answers_lose_in_the_categories_of_their_flaws(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=scripted(FLAWED)) as server:
        # Scores are information; only --min-score turns a low one into exit 1.
        card = _eval(tmp_path, server, "--min-score", "0.9", code=1)
    scores = _scores(card)
    categories = card["categories"]
    lower = {n for n, s in scores.items() if s is not None and s < 1.0}
    assert lower == {
        "entities",
        "facts",
        "supersessions",
        "duplicates",
        "must_not_store",
        "derivable_not_skill",
        "noise_tips",
        "tacit_duplicates",
    }
    assert categories["entities"]["wrong_merges"] == 1
    # The poisoned tip was proposed and held by the safety gate: not filed, so it passes.
    assert categories["poisoned_held"]["held"] == 1
    assert scores["poisoned_held"] == 1.0
    assert card["mean"] < 0.8, json.dumps(card, indent=1)


def _recording_runs() -> list[Path]:
    return sorted(p for p in RECORDINGS.glob("*") if (p / "requests").is_dir())


@pytest.mark.skipif(not _recording_runs(), reason="no recording yet (tests/recordings/eval/)")
@pytest.mark.parametrize("run", _recording_runs(), ids=lambda p: p.name)
def test_a_recorded_model_keeps_its_baseline(tmp_path: Path, run: Path) -> None:
    baseline = json.loads((run / "baseline.json").read_text(encoding="utf-8"))
    with FakeAnthropicServer(handler=replay_handler(run)) as server:
        card = _eval(tmp_path, server, "--retrieval")
    scores = _scores(card)
    worse = {
        name: (scores.get(name), floor)
        for name, floor in baseline["categories"].items()
        if floor is not None and (scores.get(name) is None or scores[name] < floor - 1e-9)
    }
    assert worse == {}, f"scores below the recorded baseline (now, baseline): {worse}"


def test_a_recording_replays_by_excerpt_and_a_missing_one_names_it(tmp_path: Path) -> None:
    run = tmp_path / "recording"
    with FakeAnthropicServer(handler=recording_handler(scripted(IDEAL), run)) as server:
        recorded = _eval(tmp_path / "a", server)
    assert len(list((run / "answers").glob("*.json"))) == len(list((run / "requests").glob("*")))
    card_path = tmp_path / "card.json"
    card_path.write_text(json.dumps(recorded), encoding="utf-8")
    write_baseline(card_path, run)
    baseline = json.loads((run / "baseline.json").read_text(encoding="utf-8"))
    assert baseline["categories"]["facts"] == 1.0

    # Replayed (new nonces, so only the excerpt can match): the same scorecard.
    with FakeAnthropicServer(handler=replay_handler(run)) as server:
        replayed = _eval(tmp_path / "b", server)
    assert _scores(replayed) == _scores(recorded)

    # A conversation the recording lacks fails loudly, naming its excerpt.
    for number in sorted(p.name for p in (run / "requests").glob("*.json")):
        body = json.loads((run / "requests" / number).read_text(encoding="utf-8"))
        if "data disk is nearly full" in user_text(body):
            (run / "answers" / number).unlink()
    with FakeAnthropicServer(handler=replay_handler(run)) as server:
        config = _config(tmp_path, server.base_url)
        memoryd("--config", str(config), "eval", cwd=tmp_path, env={"ANTHROPIC_API_KEY": "t"})
        errors = [str(e) for e in server.handler_errors]
    assert any("no recording for record_memories" in e and "data disk" in e for e in errors)


def test_a_set_that_cannot_be_used_exits_2_and_an_unusable_endpoint_78(tmp_path: Path) -> None:
    with FakeAnthropicServer(handler=scripted(IDEAL), api_key="right") as server:
        config = _config(tmp_path, server.base_url)
        bad_set = memoryd(
            "--config",
            str(config),
            "eval",
            "--set",
            str(tmp_path / "nowhere"),
            cwd=tmp_path,
            env={"ANTHROPIC_API_KEY": "right"},
        )
        wrong_key = memoryd(
            "--config", str(config), "eval", cwd=tmp_path, env={"ANTHROPIC_API_KEY": "wrong"}
        )
    assert bad_set.returncode == 2, bad_set.stderr[-2000:]
    assert "cannot read the labels" in bad_set.stderr
    assert wrong_key.returncode == 78, wrong_key.stderr[-2000:]
    assert "could not be used" in wrong_key.stderr
    assert wrong_key.stdout == ""
    assert not (tmp_path / "operator-store").exists()
