"""The configuration model, its error messages and the environment checks."""

from __future__ import annotations

import os
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

from memoryd.cli import main
from memoryd.errors import ConfigError
from memoryd.settings import (
    check_environment,
    find_api_key,
    find_base_url,
    load_settings,
    parse_settings,
    resolve_config_path,
    state_directory,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config" / "memoryd.example.toml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "memoryd.toml"
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert caught.value.path == str(path)
    return caught.value.problems


def test_example_configuration_is_valid_and_documents_every_key() -> None:
    loaded = load_settings(EXAMPLE)
    settings = loaded.settings
    assert settings.store.path == Path("/var/lib/memoryd/store")
    assert [a.name for a in settings.agents] == ["chief-of-staff", "researcher"]
    assert settings.agents[1].sources[0].routine == "research-expansion"
    # Every key of the model appears in the example, set or commented out.
    text = EXAMPLE.read_text(encoding="utf-8")
    for section, model in settings.model_dump().items():
        if isinstance(model, dict):
            for key in model:
                assert f"{key} =" in text, f"{section}.{key} is not documented in the example"


def test_minimal_configuration_takes_documented_defaults(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, '[store]\npath = "store"\n')).settings
    assert settings.store.path == tmp_path / "store"
    assert settings.store.tacit_file == "MEMORY.md"
    assert settings.store.skills_dir == "agents"
    assert settings.llm.provider == "anthropic"
    assert settings.llm.model == "claude-haiku-5-5"
    assert settings.llm.timeout_seconds == 120
    assert settings.budget.daily_usd == 5.0
    assert settings.backfill.window == timedelta(days=7)
    assert settings.schedule.heartbeat_minutes == 30
    assert settings.schedule.rewrite_cron == "0 3 * * sun"
    assert settings.schedule.timezone == "UTC"
    assert settings.git.author_name == "memoryd"
    assert settings.git.push is False
    assert settings.entities.min_mentions == 3
    assert (settings.decay.hot_days, settings.decay.warm_days) == (7, 30)
    assert settings.rewrite.use_batches is False
    assert settings.index.commands == []


def test_every_problem_is_reported_at_once_with_its_key_path(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[store]
path = "s"
colour = "blue"

[llm]
provider = "openai"
timeout_seconds = -1

[schedule]
timezone = "Mars/Olympus"

[[agents]]
name = "a"
  [[agents.sources]]
  format = "claude-code"
  path = "x"

[[agents]]
name = "b"
  [[agents.sources]]
  format = "claude-code"
  path = "x"
  [[agents.sources]]
  format = "word-doc"
  path = "y"
""",
    )
    problems = problems_of(path)
    assert "At 'store.colour': unknown key" in problems
    assert any(p.startswith("At 'llm.provider': ") for p in problems)
    assert any(p.startswith("At 'llm.timeout_seconds': ") for p in problems)
    assert any(p.startswith("At 'schedule.timezone': unknown time zone") for p in problems)
    assert any(p.startswith("At 'agents[\"b\"].sources[1].format': ") for p in problems)
    assert len(problems) == 5


def test_missing_store_path_is_named(tmp_path: Path) -> None:
    assert problems_of(write(tmp_path, "[llm]\nmodel = 'x'\n")) == [
        "At 'store': required key is missing"
    ]


def test_duplicate_agent_names_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, '[store]\npath="s"\n[[agents]]\nname="a"\n[[agents]]\nname="a"\n')
    assert problems_of(path) == ["At 'agents[1].name': agent 'a' is defined twice"]


@pytest.mark.parametrize("name", ["../evil", "Chief", "", "a/b", "x" * 65])
def test_agent_names_must_be_plain(tmp_path: Path, name: str) -> None:
    problems = problems_of(write(tmp_path, f'[store]\npath="s"\n[[agents]]\nname="{name}"\n'))
    assert problems[0].startswith("At 'agents[0].name': ")


@pytest.mark.parametrize("value", ["../MEMORY.md", "/etc/passwd", ".git/x", "life/x.md"])
def test_store_relative_names_stay_inside_the_store(tmp_path: Path, value: str) -> None:
    problems = problems_of(write(tmp_path, f'[store]\npath="s"\ntacit_file="{value}"\n'))
    assert problems[0].startswith("At 'store.tacit_file': ")


def test_not_toml_is_a_config_error(tmp_path: Path) -> None:
    problems = problems_of(write(tmp_path, "[store\npath = 1"))
    assert problems[0].startswith("not valid TOML")


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    assert problems_of(tmp_path / "absent.toml") == ["the file does not exist"]


def test_bad_patterns_and_durations_are_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[store]\npath="s"\n[cleaning]\nextra_patterns=["(unclosed"]\n[backfill]\nsince="7x"\n',
    )
    problems = problems_of(path)
    assert any(p.startswith("At 'cleaning.extra_patterns': pattern '(unclosed'") for p in problems)
    assert any(p.startswith("At 'backfill.since': ") for p in problems)


def test_backfill_all_has_no_window() -> None:
    settings = parse_settings({"store": {"path": "/s"}, "backfill": {"since": "all"}})
    assert settings.backfill.window is None
    settings = parse_settings({"store": {"path": "/s"}, "backfill": {"since": "2w"}})
    assert settings.backfill.window == timedelta(weeks=2)


def test_config_path_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_config_path("given.toml", {"MEMORYD_CONFIG": "env.toml"}) == Path("given.toml")
    assert resolve_config_path(None, {"MEMORYD_CONFIG": "env.toml"}) == Path("env.toml")
    (tmp_path / "memoryd.toml").write_text("", encoding="utf-8")
    assert resolve_config_path(None, {}) == Path("memoryd.toml")


def test_no_config_anywhere_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    if Path("/etc/memoryd/memoryd.toml").exists():
        pytest.skip("this machine has a system-wide memoryd configuration")
    with pytest.raises(ConfigError, match="no configuration file found"):
        resolve_config_path(None, {})


def base(tmp_path: Path, **extra: object) -> dict[str, object]:
    raw: dict[str, object] = {
        "store": {"path": str(tmp_path / "store")},
        "state": {"path": str(tmp_path / "state")},
        "llm": {"api_key_file": str(tmp_path / "key")},
    }
    raw.update(extra)
    return raw


def test_a_healthy_environment_has_no_problems(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("test-key\n", encoding="utf-8")
    (tmp_path / "logs").mkdir()
    raw = base(tmp_path, agents=[{"name": "a", "sources": [{"format": "jsonl", "path": "logs"}]}])
    settings = parse_settings(raw, tmp_path / "memoryd.toml")
    report = check_environment(settings, {})
    assert report.problems == []
    assert report.warnings == []


def test_missing_api_key_is_a_problem_naming_the_ways_to_give_one(tmp_path: Path) -> None:
    settings = parse_settings({"store": {"path": str(tmp_path / "s")}})
    report = check_environment(settings, {"HOME": str(tmp_path)})
    assert any("no API key found" in p and "LoadCredential" in p for p in report.problems)
    assert check_environment(settings, {"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "k"}).ok


def test_markers_provider_needs_no_key(tmp_path: Path) -> None:
    settings = parse_settings(
        {"store": {"path": str(tmp_path / "s")}, "llm": {"provider": "markers"}}
    )
    assert check_environment(settings, {"HOME": str(tmp_path)}).ok


def test_api_key_resolution_order(tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "anthropic-api-key").write_text("from-credential\n", encoding="utf-8")
    (tmp_path / "key").write_text("from-file", encoding="utf-8")
    environ = {"CREDENTIALS_DIRECTORY": str(creds), "ANTHROPIC_API_KEY": "from-env"}
    with_file = parse_settings(base(tmp_path))
    assert find_api_key(with_file, environ)[0] == "from-file"
    without_file = parse_settings({"store": {"path": "/s"}})
    assert find_api_key(without_file, environ)[0] == "from-credential"
    assert find_api_key(without_file, {"ANTHROPIC_API_KEY": "from-env"})[0] == "from-env"
    assert find_api_key(without_file, {})[0] is None


def test_unreadable_key_file_is_reported(tmp_path: Path) -> None:
    settings = parse_settings(base(tmp_path))
    report = check_environment(settings, {})
    assert any(p.startswith("At 'llm.api_key_file': cannot read") for p in report.problems)


def test_base_url_falls_back_to_the_environment() -> None:
    settings = parse_settings({"store": {"path": "/s"}})
    assert find_base_url(settings, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}) == (
        "http://127.0.0.1:9"
    )
    explicit = parse_settings({"store": {"path": "/s"}, "llm": {"base_url": "http://h:1"}})
    assert find_base_url(explicit, {"ANTHROPIC_BASE_URL": "http://other"}) == "http://h:1"


def test_budget_needs_a_priced_model(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("k", encoding="utf-8")
    raw = base(tmp_path)
    raw["llm"] = {"api_key_file": str(tmp_path / "key"), "model": "local-llama"}
    report = check_environment(parse_settings(raw), {})
    assert any(p.startswith("At 'llm.model': no price is known") for p in report.problems)
    raw["llm"] = {**raw["llm"], "prices": {"local-llama": {"input": 0, "output": 0}}}  # type: ignore[dict-item]
    assert check_environment(parse_settings(raw), {}).ok
    raw["llm"] = {"api_key_file": str(tmp_path / "key"), "model": "local-llama"}
    raw["budget"] = {"daily_usd": 0}
    assert check_environment(parse_settings(raw), {}).ok


@pytest.mark.parametrize(
    ("cron", "fragment"),
    [
        ("0 3 * * 0", "day of week with names"),
        ("0 3 * *", "five fields"),
        ("61 3 * * sun", "rewrite_cron"),
        ("0 3 * * funday", "rewrite_cron"),
    ],
)
def test_cron_fields_are_checked(tmp_path: Path, cron: str, fragment: str) -> None:
    (tmp_path / "key").write_text("k", encoding="utf-8")
    settings = parse_settings(base(tmp_path, schedule={"rewrite_cron": cron}))
    report = check_environment(settings, {})
    assert len(report.problems) == 1
    assert report.problems[0].startswith("At 'schedule.rewrite_cron': ")
    assert fragment in report.problems[0]


def test_missing_source_is_a_warning_and_unreadable_an_error(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("k", encoding="utf-8")
    locked = tmp_path / "locked"
    locked.mkdir()
    raw = base(
        tmp_path,
        agents=[
            {
                "name": "a",
                "sources": [
                    {"format": "claude-code", "path": str(tmp_path / "not-yet")},
                    {"format": "claude-code", "path": str(locked)},
                    {"format": "jsonl", "path": str(tmp_path / "nothing-*.jsonl")},
                ],
            }
        ],
    )
    settings = parse_settings(raw)
    locked.chmod(0)
    try:
        report = check_environment(settings, {})
    finally:
        locked.chmod(0o755)
    assert any(w.startswith("At 'agents[\"a\"].sources[0].path': ") for w in report.warnings)
    assert any(w.startswith("At 'agents[\"a\"].sources[2].path': nothing") for w in report.warnings)
    if os.geteuid() != 0:  # root reads everything; the check is still exercised elsewhere
        assert any(p.startswith("At 'agents[\"a\"].sources[1].path': ") for p in report.problems)


def test_unwritable_state_directory_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("k", encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    settings = parse_settings(base(tmp_path, state={"path": str(blocker)}))
    report = check_environment(settings, {})
    assert any(p.startswith("At 'state.path': ") for p in report.problems)


def test_state_directory_resolution(tmp_path: Path) -> None:
    settings = parse_settings({"store": {"path": "/s"}})
    assert state_directory(settings, {"STATE_DIRECTORY": "/var/lib/m:/x"}) == Path("/var/lib/m")
    assert state_directory(settings, {"HOME": "/home/u"}) == Path("/home/u/.local/state/memoryd")
    explicit = parse_settings({"store": {"path": "/s"}, "state": {"path": "/st"}})
    assert state_directory(explicit, {"STATE_DIRECTORY": "/x"}) == Path("/st")


def test_settings_are_frozen() -> None:
    settings = parse_settings({"store": {"path": "/s"}})
    with pytest.raises(ValueError, match="frozen"):
        settings.store.path = Path("/elsewhere")  # type: ignore[misc]


def test_example_parses_with_tomllib_roundtrip() -> None:
    raw = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert parse_settings(raw).llm.prices == {}


def test_a_misspelt_key_or_section_gets_a_suggestion(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[store]\npath="s"\n[llm]\nchunk_token = 9000\n[schedul]\ntimezone="UTC"\n'
        '[[agents]]\nname="ops"\n[[agents.sources]]\nformat="jsonl"\npath="x"\nroutin="r"\n'
        "[llm.prices.m]\ninput = 1\noutput = 2\ncache_reed = 3\n",
    )
    problems = problems_of(path)
    assert "At 'llm.chunk_token': unknown key; did you mean 'chunk_tokens'?" in problems
    assert "At 'schedul': unknown key; did you mean 'schedule'?" in problems
    assert "At 'agents[\"ops\"].sources[0].routin': unknown key; did you mean 'routine'?" in (
        problems
    )
    assert "At 'llm.prices.m.cache_reed': unknown key; did you mean 'cache_read'?" in problems
    assert "At 'store.zzz': unknown key" in problems_of(
        write(tmp_path, '[store]\npath="s"\nzzz=1\n')
    )


@pytest.mark.parametrize(
    ("table", "key", "value"),
    [
        ("schedule", "heartbeat_minutes", '"30"'),
        ("budget", "daily_usd", '"5"'),
        ("git", "push", '"true"'),
        ("llm", "timeout_seconds", '"60"'),
    ],
)
def test_a_string_is_never_a_number_or_a_boolean(
    tmp_path: Path, table: str, key: str, value: str
) -> None:
    problems = problems_of(write(tmp_path, f'[store]\npath="s"\n[{table}]\n{key} = {value}\n'))
    assert len(problems) == 1
    assert problems[0].startswith(f"At '{table}.{key}': must be ")
    assert "without quotes" in problems[0]


def test_whole_numbers_are_still_accepted_for_decimal_keys() -> None:
    settings = parse_settings({"store": {"path": "/s"}, "budget": {"daily_usd": 5}})
    assert settings.budget.daily_usd == 5.0


def test_a_file_saved_by_notepad_is_read(tmp_path: Path) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_bytes(
        b'\xef\xbb\xbf[store]\r\npath = "s"\r\n[schedule]\r\nheartbeat_minutes = 5\r\n'
    )
    assert load_settings(path).settings.schedule.heartbeat_minutes == 5


@pytest.mark.parametrize("value", ['"C:\\Users\\ops\\store"', '"C:\\path"'])
def test_a_backslash_in_double_quotes_gets_a_hint(tmp_path: Path, value: str) -> None:
    problems = problems_of(write(tmp_path, f"[store]\npath = {value}\n"))
    assert problems[0].startswith("not valid TOML: ")
    assert "write a Windows path in single quotes" in problems[0]


def test_single_quoted_windows_paths_are_fine(tmp_path: Path) -> None:
    path = write(tmp_path, "[store]\npath = 'C:\\Users\\ops'\n")
    assert load_settings(path).settings.store.path.name.endswith("ops")


def test_problems_name_the_agent_and_say_the_constraint_in_words(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[store]\npath="s"\n[llm]\nmax_attempts = 0\nconcurrency = 65\n'
        '[[agents]]\nname="main"\n[[agents]]\nname="ops-bot"\n'
        '[[agents.sources]]\nformat="jsonl"\npath=""\nroutine="Daily Digest"\n'
        '[[agents]]\nname="Bad Name"\n',
    )
    problems = problems_of(path)
    assert "At 'llm.max_attempts': must be at least 1" in problems
    assert "At 'llm.concurrency': must be at most 64" in problems
    assert "At 'agents[\"ops-bot\"].sources[0].path': must not be empty" in problems
    rule = "must be 1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
    assert f"At 'agents[\"ops-bot\"].sources[0].routine': {rule}" in problems
    assert f"At 'agents[2].name': {rule}" in problems
    assert not any("pattern" in p for p in problems)


def test_cross_field_problems_come_with_field_problems(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[store]\npath="s"\n[schedule]\ntimezone="Mars/Olympus"\n'
        "[decay]\nhot_days = 40\nwarm_days = 30\n"
        '[[agents]]\nname="a"\n[[agents]]\nname="a"\n',
    )
    problems = problems_of(path)
    assert any(p.startswith("At 'schedule.timezone': unknown time zone") for p in problems)
    assert "At 'decay.warm_days': must be greater than decay.hot_days" in problems
    assert "At 'agents[1].name': agent 'a' is defined twice" in problems
    assert len(problems) == 3


def test_check_reports_environment_problems_with_the_file_problems(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    logs = tmp_path / "logs"
    logs.mkdir()
    path = write(
        tmp_path,
        '[store]\npath = "a-file"\n[llm]\nprovider = "markers"\n'
        '[schedule]\ntimezone = "Mars/Olympus"\n[decay]\nhot_days = 40\n'
        '[[agents]]\nname = "ops"\n[[agents.sources]]\nformat = "jsonl"\npath = "logs"\n'
        '[[agents]]\nname = "Bad Name"\n',
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {"STATE_DIRECTORY": str(tmp_path / "state")})
    problems = caught.value.problems
    assert any(p.startswith("At 'schedule.timezone': unknown time zone") for p in problems)
    assert "At 'decay.warm_days': must be greater than decay.hot_days" in problems
    assert any(p.startswith("At 'agents[1].name': must be 1 to 64") for p in problems)
    assert f"At 'store.path': {tmp_path / 'a-file'} exists and is not a directory" in problems
    assert len(problems) == 4, problems
    # without the environment (every command but `check`), only the file is judged
    assert len(problems_of(path)) == 3


def test_the_check_command_says_every_problem_and_exits_78(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    path = write(
        tmp_path,
        '[store]\npath = "a-file"\n[llm]\nprovider = "markers"\nchunk_token = 1\n'
        f'[state]\npath = "{tmp_path / "state"}"\n',
    )
    assert main(["--config", str(path), "check"]) == 78
    said = capsys.readouterr().err
    assert "At 'llm.chunk_token': unknown key; did you mean 'chunk_tokens'?" in said
    assert "At 'store.path': " in said
    assert "exists and is not a directory" in said
