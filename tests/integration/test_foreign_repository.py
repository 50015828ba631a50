"""memoryd never runs git in a repository another user owns, and never runs the content drivers
(filters) a repository configures: a filter that would write a marker file is never run, and a
store in another user's repository (or below one) is refused with exit 78 before any git."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.support.cli import write_config
from tests.support.reading import memoryd, write_transcript
from tests.support.users import ensure_user, require_root_tools

from memoryd.errors import EXIT_CONFIG, EXIT_OK

pytestmark = pytest.mark.slow

NEIGHBOUR = "memoryd-neighbour"


def _plant_filter(repository: Path, marker: Path) -> None:
    """A git repository at `repository` whose configuration runs a filter writing `marker`."""
    repository.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "--quiet", str(repository)], check=True)
    command = f"touch {marker}; cat"
    for key in ("clean", "smudge"):
        subprocess.run(
            ["git", "-C", str(repository), "config", f"filter.evil.{key}", command], check=True
        )
    (repository / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")


def _events(stderr: str) -> list[str]:
    return [json.loads(line)["event"] for line in stderr.splitlines() if line.startswith("{")]


def _give_to(user: str, folder: Path) -> None:
    subprocess.run(["chown", "-R", f"{user}:{user}", str(folder)], check=True)


@pytest.mark.parametrize("inside", [False, True], ids=["store-is-the-repo", "store-below-it"])
def test_a_repository_of_another_user_is_refused_before_any_git(
    tmp_path: Path, inside: bool
) -> None:
    require_root_tools()
    ensure_user(NEIGHBOUR)
    marker = tmp_path / "filter-ran"
    write_config(tmp_path)
    write_transcript(tmp_path)
    if inside:
        _plant_filter(tmp_path / "outer", marker)
        _give_to(NEIGHBOUR, tmp_path / "outer")
        (tmp_path / "outer" / "store").mkdir()  # memoryd's own folder, in the neighbour's tree
        (tmp_path / "memoryd.toml").write_text(
            (tmp_path / "memoryd.toml").read_text("utf-8").replace('"store"', '"outer/store"'),
            encoding="utf-8",
        )
    else:
        _plant_filter(tmp_path / "store", marker)
        _give_to(NEIGHBOUR, tmp_path / "store")
    for command in ("init", "heartbeat"):
        result = memoryd(tmp_path, command)
        assert result.returncode == EXIT_CONFIG, (command, result.stdout, result.stderr)
        assert "belongs to user id" in result.stderr and "chown" in result.stderr
        assert "store.foreign_owner" in _events(result.stderr)
    status = memoryd(tmp_path, "status")
    assert status.returncode == EXIT_CONFIG and "belongs to user id" in status.stdout
    assert not marker.exists()
    git_dir = tmp_path / ("outer" if inside else "store") / ".git"
    assert not (git_dir / "refs" / "heads" / "main").exists()  # nothing committed


def test_a_filter_configured_in_memoryds_own_repository_is_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "filter-ran"
    write_config(tmp_path)
    write_transcript(tmp_path)
    _plant_filter(tmp_path / "store", marker)
    assert memoryd(tmp_path, "init").returncode == EXIT_OK
    result = memoryd(tmp_path, "heartbeat")
    assert result.returncode == EXIT_OK, result.stderr
    store = str(tmp_path / "store")
    files = subprocess.run(
        ["git", "-C", store, "ls-files"], check=True, capture_output=True, text=True
    ).stdout
    assert "items.json" in files  # the heartbeat committed its files
    assert not marker.exists()
    assert os.geteuid() == os.stat(tmp_path / "store" / ".git").st_uid
