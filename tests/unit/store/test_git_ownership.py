"""Who owns the store's repository, and which content drivers memoryd's git switches off
(`memoryd.gitrepo._ownership`), with real files and real git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memoryd.errors import EXIT_CONFIG
from memoryd.gitrepo import ForeignRepositoryError, GitIdentity, GitStore
from memoryd.gitrepo._ownership import check_owned, config_files, driver_overrides


def test_a_path_of_another_user_is_refused_and_a_missing_one_skipped(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    check_owned((mine, tmp_path / "not-yet"))
    with pytest.raises(ForeignRepositoryError) as raised:
        check_owned((mine,), user=os.geteuid() + 1)
    assert raised.value.exit_code == EXIT_CONFIG
    assert f"belongs to user id {os.geteuid()}" in str(raised.value)


def test_every_driver_named_in_the_config_files_is_switched_off(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        '[core]\n\tbare = false\n[filter "lfs"]\n\tclean = git-lfs clean\n'
        '[ filter "we\\"ird" ]\n\tsmudge = touch x\n[diff "pdf"]\n\ttextconv = pdftotext\n'
        '[merge "ours"]\n\tdriver = true\n[remote "origin"]\n\turl = x\n',
        encoding="utf-8",
    )
    overrides = dict(driver_overrides([config, tmp_path / "absent"]))
    assert overrides["filter.lfs.clean"] == "" and overrides["filter.lfs.process"] == ""
    assert overrides["filter.lfs.required"] == "false"
    assert overrides['filter.we"ird.smudge'] == ""
    assert overrides["diff.pdf.textconv"] == "" and overrides["merge.ours.driver"] == ""
    assert not any(key.startswith("remote.") for key in overrides)


def test_the_config_files_are_those_git_reads(tmp_path: Path) -> None:
    files = config_files(tmp_path / ".git", {"HOME": "/home/x"})
    assert files == [
        Path("/etc/gitconfig"),
        Path("/home/x/.config/git/config"),
        Path("/home/x/.gitconfig"),
        tmp_path / ".git" / "config",
        tmp_path / ".git" / "config.worktree",
    ]
    assert config_files(tmp_path, {"GIT_CONFIG_GLOBAL": "/g"})[1] == Path("/g")


def test_a_filter_in_the_global_config_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[filter "evil"]\n\tclean = touch {marker}; cat\n', encoding="utf-8"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    store = tmp_path / "store"
    git = GitStore(store, GitIdentity("t", "t@localhost"), None)
    git.init()
    (store / ".gitattributes").write_text("* filter=evil\n", encoding="utf-8")
    (store / "a.md").write_text("a\n", encoding="utf-8")
    assert git.commit([".gitattributes", "a.md"], "add") is not None
    shown = subprocess.run(
        ["git", "-C", str(store), "show", "HEAD:a.md"], capture_output=True, text=True, check=True
    )
    assert shown.stdout == "a\n" and not marker.exists()
