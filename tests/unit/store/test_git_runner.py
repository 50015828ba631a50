"""How the git adapter finds a repository and runs git as a command (no GitPython),
on real repositories: which repository a folder is in, and what a failing, busy or hanging git
command becomes (GitError, GitBusyError with exit code 75, a timeout)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.support.git_store import IDENTITY, NOW, git, make_repo, store_at

from memoryd.errors import EXIT_TEMPFAIL, GitBusyError, GitError
from memoryd.gitrepo._repository import GitStore, find_work_tree
from memoryd.gitrepo._support import find_repository


@pytest.fixture(autouse=True)
def _clean_git_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def commit_one(repo: Path, name: str = "a.md") -> None:
    (repo / name).write_text(f"{name}\n", encoding="utf-8")
    git(repo, "add", name)
    git(repo, "commit", "--quiet", "-m", name)


def test_a_folder_deep_in_a_work_tree_belongs_to_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    deep = repo / "a" / "b"
    deep.mkdir(parents=True)
    assert find_repository(deep) == (repo, repo / ".git")
    assert find_work_tree(deep / "not-yet" / "there") == repo.resolve()
    assert find_repository(tmp_path / "missing") is None
    assert find_repository(tmp_path) is None


def test_a_linked_work_tree_is_its_own_work_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit_one(repo)
    git(repo, "worktree", "add", "--quiet", "-b", "side", str(tmp_path / "side"))
    side = tmp_path / "side"
    work_tree, git_dir = find_repository(side / ".") or (None, None)
    assert work_tree == side
    assert git_dir is not None and git_dir.resolve() == (repo / ".git" / "worktrees" / "side")
    store = store_at(side)
    (side / "b.md").write_text("b\n", encoding="utf-8")
    sha = store.commit(["b.md"], "on the side")
    assert sha == git(side, "rev-parse", "HEAD").strip()
    assert git(repo, "log", "--format=%s", "-1", "side").strip() == "on the side"
    assert git(repo, "rev-list", "--count", "main").strip() == "1"  # main left alone


def test_a_bare_repository_and_a_broken_dot_git_are_no_work_tree(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    assert find_repository(bare) == (None, bare)
    assert find_work_tree(bare) is None
    with pytest.raises(GitError, match="inside a bare repository"):
        store_at(bare).status()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("not a pointer\n", encoding="utf-8")
    with pytest.raises(GitError, match="not inside a git work tree"):
        store_at(broken).head()


def test_a_failing_command_says_what_git_said(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit_one(repo)
    store = store_at(repo)
    with pytest.raises(GitError, match=r"git cat-file failed: fatal: Not a valid object name"):
        store.plumbing("cat-file", "-p", "no-such-object")
    status, output = store.plumbing("cat-file", "-e", "no-such-object", check=False)
    assert status != 0 and output == b""
    assert store.contains("0" * 40) is False
    assert store.is_ancestor("0" * 40) is False
    assert store.is_ancestor(git(repo, "rev-parse", "HEAD").strip()) is True


def test_output_is_passed_on_byte_for_byte(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = store_at(repo)
    data = b"two lines\r\nno final newline \xff"
    _status, sha = store.plumbing("hash-object", "-w", "--stdin", stdin=data)
    assert store.plumbing("cat-file", "-p", sha.decode().strip())[1] == data


def test_a_held_index_lock_is_transient_with_exit_75(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    commit_one(repo)
    (repo / ".git" / "index.lock").write_text("", encoding="utf-8")
    store = store_at(repo)
    with pytest.raises(GitBusyError, match=r"index\.lock") as raised:
        store.plumbing("update-index", "--refresh")
    assert raised.value.exit_code == EXIT_TEMPFAIL == 75
    # Messages are English whatever the locale, so the mapping above can read them.
    assert "File exists" in str(raised.value)


def test_git_that_runs_past_its_timeout_is_killed_with_what_it_started(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    # The alias's shell becomes `sleep` (exec): a process git started, as `ssh` for a push.
    git(repo, "config", "alias.nap", "!f() { echo $$ > nap.pid; exec sleep 30; }; f")
    store = GitStore(repo, IDENTITY, lambda: NOW, command_timeout_seconds=1.0)
    started = time.monotonic()
    with pytest.raises(GitError, match='Timeout: the command "git nap" did not complete in 1 '):
        store.plumbing("nap")
    assert time.monotonic() - started < 20
    sleeper = Path("/proc") / (repo / "nap.pid").read_text(encoding="utf-8").strip()
    deadline = time.monotonic() + 10
    while sleeper.exists() and "\nState:\tZ" not in _status(sleeper):
        assert time.monotonic() < deadline, "the process git started outlived the timeout"
        time.sleep(0.05)


def _status(process: Path) -> str:
    try:
        return (process / "status").read_text(encoding="utf-8")
    except OSError:
        return "\nState:\tZ"  # gone meanwhile


def test_the_commands_run_in_english_with_the_forced_configuration(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.autocrlf", "true")  # overridden by memoryd's forced settings
    store = store_at(repo)
    _status, output = store.plumbing("config", "--get", "core.autocrlf")
    assert output.strip() == b"false"
    _status, output = store.plumbing("var", "GIT_AUTHOR_IDENT")
    assert output.startswith(b"memoryd test <memoryd@test.invalid>")


def test_a_git_directory_reached_directly_names_its_work_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert find_repository(repo / ".git") == (repo, repo / ".git")
    assert find_repository(repo / ".git" / "refs") == (repo, repo / ".git")
    elsewhere = tmp_path / "elsewhere"
    git(repo, "config", "core.worktree", str(elsewhere))
    assert find_repository(repo / ".git") == (elsewhere, repo / ".git")
    git(repo, "config", "core.bare", "true")
    assert find_repository(repo / ".git") == (None, repo / ".git")
    # Through its `.git` folder a work tree is found as before, whatever the configuration says.
    assert find_repository(repo) == (repo, repo / ".git")


def test_a_dot_git_file_pointing_nowhere_stops_the_search(tmp_path: Path) -> None:
    outer = make_repo(tmp_path / "outer")
    inner = outer / "inner"
    inner.mkdir()
    (inner / ".git").write_text("gitdir: ../../missing\n", encoding="utf-8")
    assert find_repository(inner) is None  # not the outer repository
    assert find_repository(outer / "other") is None  # does not exist
    (outer / "other").mkdir()
    assert find_repository(outer / "other") == (outer, outer / ".git")
