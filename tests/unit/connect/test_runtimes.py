"""Each runtime's edits: idempotent, reversible, the user's own entries kept, an unparsable file
refused untouched."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from memoryd.connect import RUNTIMES, Target, apply_edits, plan_edits
from memoryd.errors import EXIT_CONFIG, AgentConfigError

SCOPES = ("user", "project")


def make_target(tmp_path: Path, scope: str, environ: dict[str, str] | None = None) -> Target:
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "project").mkdir(exist_ok=True)
    return Target(
        executable="/opt/memoryd/bin/memoryd",
        config_path=tmp_path / "memoryd.toml",
        agent="builder",
        scope=scope,
        project=tmp_path / "project",
        home=tmp_path / "home",
        environ=environ or {},
    )


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` but memoryd's backups, by relative path."""
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.endswith(".memoryd-backup")
    }


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def seed_user_files(target: Target) -> None:
    """Each runtime's files as a user has them before memoryd: their own hooks, servers, text."""
    home, project = target.home, target.project
    own_hook = {"matcher": "startup", "hooks": [{"type": "command", "command": "echo mine"}]}
    settings = {"model": "opus", "hooks": {"SessionStart": [own_hook], "Stop": [own_hook]}}
    for folder in (home / ".claude", project / ".claude"):
        write(folder / "settings.json", json.dumps(settings, indent=2) + "\n")
    write(folder / "settings.local.json", '{\n    "enabledMcpjsonServers": ["theirs"]\n}\n')
    servers = {"numStartups": 4, "mcpServers": {"theirs": {"command": "theirs-mcp"}}}
    write(home / ".claude.json", json.dumps(servers, indent=2))
    write(project / ".mcp.json", json.dumps({"mcpServers": servers["mcpServers"]}, indent=2))
    toml = '# my settings\nmodel = "o3"  # the good one\n\n[mcp_servers.theirs]\ncommand = "x"\n'
    for folder in (home / ".codex", project / ".codex"):
        write(folder / "config.toml", toml)
        write(folder / "hooks.json", json.dumps({"hooks": {"SessionStart": [own_hook]}}) + "\n")
    openclaw = {"agents": {"defaults": {"workspace": "~/ws"}}, "mcp": {"servers": {"t": {}}}}
    write(home / ".openclaw" / "openclaw.json", json.dumps(openclaw, indent=2) + "\n")
    write(home / "ws" / "AGENTS.md", "# My agent\n\nBe kind.\n")
    write(project / "AGENTS.md", "# Project rules\n")
    write(project / "skills" / "theirs" / "SKILL.md", "---\nname: theirs\n---\n")
    write(home / ".paperclip" / "skills" / "theirs" / "SKILL.md", "---\nname: theirs\n---\n")


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("seeded", [False, True], ids=["fresh", "user-files"])
def test_connect_is_idempotent_and_disconnect_restores_every_byte(
    tmp_path: Path, runtime: str, scope: str, seeded: bool
) -> None:
    target = make_target(tmp_path, scope)
    if seeded:
        seed_user_files(target)
    original = snapshot(tmp_path)

    first = plan_edits(runtime, target, connect=True)
    assert any(edit.changed for edit in first)
    apply_edits(first)
    connected = snapshot(tmp_path)
    assert connected != original

    second = plan_edits(runtime, target, connect=True)
    assert [edit.action for edit in second] == ["unchanged"] * len(second)
    apply_edits(second)
    assert snapshot(tmp_path) == connected

    apply_edits(plan_edits(runtime, target, connect=False))
    assert snapshot(tmp_path) == original
    again = plan_edits(runtime, target, connect=False)
    assert [edit.action for edit in again] == ["unchanged"] * len(again)


@pytest.mark.parametrize("scope", SCOPES)
def test_claude_code_gets_the_hook_the_server_and_the_approval(tmp_path: Path, scope: str) -> None:
    target = make_target(tmp_path, scope)
    seed_user_files(target)
    apply_edits(plan_edits("claude-code", target, connect=True))
    base = target.home / ".claude" if scope == "user" else target.project / ".claude"
    settings = json.loads((base / "settings.json").read_text())
    groups = settings["hooks"]["SessionStart"]
    assert groups[0]["hooks"][0]["command"] == "echo mine"
    assert groups[-1] == {
        "matcher": "startup|clear|compact",
        "hooks": [
            {
                "type": "command",
                "command": "/opt/memoryd/bin/memoryd --config "
                f"{tmp_path}/memoryd.toml --log-level warning context --agent builder "
                "--format claude-code",
            }
        ],
    }
    assert settings["model"] == "opus" and "Stop" in settings["hooks"]
    servers_file = target.home / ".claude.json" if scope == "user" else target.project / ".mcp.json"
    servers = json.loads(servers_file.read_text())["mcpServers"]
    assert list(servers) == ["theirs", "memoryd"]
    assert servers["memoryd"]["type"] == "stdio"
    assert servers["memoryd"]["args"][-3:] == ["mcp", "--agent", "builder"]
    if scope == "project":
        local = json.loads((base / "settings.local.json").read_text())
        assert local["enabledMcpjsonServers"] == ["theirs", "memoryd"]


def test_a_changed_agent_replaces_our_hook_and_keeps_the_users(tmp_path: Path) -> None:
    target = make_target(tmp_path, "user")
    seed_user_files(target)
    apply_edits(plan_edits("claude-code", target, connect=True))
    renamed = Target(**{**target.__dict__, "agent": "reviewer"})
    apply_edits(plan_edits("claude-code", renamed, connect=True))
    groups = json.loads((target.home / ".claude" / "settings.json").read_text())["hooks"]
    commands = [h["command"] for g in groups["SessionStart"] for h in g["hooks"]]
    assert commands[0] == "echo mine" and len(commands) == 2
    assert commands[1].endswith("--agent reviewer --format claude-code")


@pytest.mark.parametrize("runtime", ["claude-code", "codex"])
def test_a_session_start_entry_of_another_shape_is_kept_as_it_is(
    tmp_path: Path, runtime: str
) -> None:
    target = make_target(tmp_path, "user")
    folder = target.home / (".claude" if runtime == "claude-code" else ".codex")
    settings = folder / ("settings.json" if runtime == "claude-code" else "hooks.json")
    write(settings, json.dumps({"hooks": {"SessionStart": ["echo odd", 7]}}) + "\n")
    apply_edits(plan_edits(runtime, target, connect=True))
    apply_edits(plan_edits(runtime, target, connect=True))
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert groups[:2] == ["echo odd", 7] and len(groups) == 3
    apply_edits(plan_edits(runtime, target, connect=False))
    assert json.loads(settings.read_text())["hooks"]["SessionStart"] == ["echo odd", 7]


def test_codex_keeps_comments_and_writes_the_server_table(tmp_path: Path) -> None:
    target = make_target(tmp_path, "user", {"CODEX_HOME": str(tmp_path / "codex-home")})
    write(tmp_path / "codex-home" / "config.toml", '# mine\nmodel = "o3"  # keep\n')
    apply_edits(plan_edits("codex", target, connect=True))
    text = (tmp_path / "codex-home" / "config.toml").read_text()
    assert text.startswith('# mine\nmodel = "o3"  # keep\n')
    server = tomllib.loads(text)["mcp_servers"]["memoryd"]
    assert server == {
        "command": "/opt/memoryd/bin/memoryd",
        "args": target.mcp_arguments(),
        "startup_timeout_sec": 60.0,  # Codex's 10 s default is short for a cold Python start
    }
    hooks = json.loads((tmp_path / "codex-home" / "hooks.json").read_text())["hooks"]
    assert hooks["SessionStart"][0]["hooks"][0]["command"].endswith("--format codex")


def test_openclaw_puts_the_block_in_a_file_it_injects(tmp_path: Path) -> None:
    target = make_target(tmp_path, "user")
    seed_user_files(target)
    apply_edits(plan_edits("openclaw", target, connect=True))
    agents = (target.home / "ws" / "AGENTS.md").read_text()
    assert agents.startswith("# My agent\n\nBe kind.\n\n<!-- memoryd:begin")
    assert agents.endswith("<!-- memoryd:end -->\n")
    config = json.loads((target.home / ".openclaw" / "openclaw.json").read_text())
    assert list(config["mcp"]["servers"]) == ["t", "memoryd"]


def test_paperclip_refuses_a_skill_someone_else_wrote(tmp_path: Path) -> None:
    target = make_target(tmp_path, "project")
    skill = target.project / "skills" / "memoryd" / "SKILL.md"
    write(skill, "---\nname: memoryd\n---\nmine\n")
    with pytest.raises(AgentConfigError, match="did not write"):
        plan_edits("paperclip", target, connect=True)
    assert skill.read_text() == "---\nname: memoryd\n---\nmine\n"


@pytest.mark.parametrize(
    ("runtime", "relative", "text", "reason"),
    [
        ("claude-code", "home/.claude/settings.json", '{"hooks": {,}', "not valid JSON"),
        ("claude-code", "home/.claude.json", "[1, 2]", "not an object"),
        ("codex", "home/.codex/config.toml", "model = \n", "not valid TOML"),
        ("codex", "home/.codex/hooks.json", '{"hooks": []}', "not an object"),
        ("openclaw", "home/.openclaw/openclaw.json", "{ // json5\n}", "not valid JSON"),
    ],
)
def test_a_file_that_does_not_parse_is_refused_untouched(
    tmp_path: Path, runtime: str, relative: str, text: str, reason: str
) -> None:
    target = make_target(tmp_path, "user")
    write(tmp_path / relative, text)
    with pytest.raises(AgentConfigError, match=reason) as caught:
        plan_edits(runtime, target, connect=True)
    assert str(tmp_path / relative) in str(caught.value)
    assert caught.value.exit_code == EXIT_CONFIG
    assert (tmp_path / relative).read_text() == text


def test_a_symlinked_file_is_refused(tmp_path: Path) -> None:
    target = make_target(tmp_path, "user")
    write(tmp_path / "elsewhere.json", "{}")
    (target.home / ".claude").mkdir()
    (target.home / ".claude" / "settings.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(AgentConfigError, match="symbolic link"):
        plan_edits("claude-code", target, connect=True)


def test_a_changed_file_is_backed_up_and_keeps_its_mode(tmp_path: Path) -> None:
    target = make_target(tmp_path, "user")
    seed_user_files(target)
    config = target.home / ".claude.json"
    config.chmod(0o600)
    before = config.read_text()
    backups = apply_edits(plan_edits("claude-code", target, connect=True))
    backup = config.with_name(".claude.json.memoryd-backup")
    assert backup in backups
    assert backup.read_text() == before
    assert config.stat().st_mode & 0o777 == 0o600
