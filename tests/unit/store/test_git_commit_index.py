"""memoryd's commit of the index through git's plumbing (`_Session.commit_index`): the same
commit, message and reflog entry as `git commit -m`, and never over a commit made meanwhile."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.support.git_store import NOW, git, make_repo, store_at

from memoryd.errors import GitError
from memoryd.gitrepo._session import Session
from memoryd.gitrepo._support import blob_name, clean_message

MESSAGES = [
    "heartbeat: +5 facts\n\nMemoryd-Run: abc\nMemoryd-Agents: ops\n",
    "no final newline",
    "\n\n  leading blank lines\n",
    "trailing spaces   \t\nand tabs\t\t\n",
    "runs\n\n\n\nof empty lines\n \n\t\nmade one\n\n\n",
    "carriage\r\nreturns\r\n\r\n\r\nend\r\n",
    "vertical\x0b tab and\x0c form feed stay\x0b\n",
    "  indented lines keep\n    their indentation\n",
    "# not a comment for -m\nbody\n",
    "unicode spaces stay\u00a0\nna\u00efve\u2003\n",
    "",
    "\n \n\t\n",
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_message_is_cleaned_as_git_cleans_it(message: str) -> None:
    expected = subprocess.run(
        ["git", "stripspace"], input=message.encode(), capture_output=True, check=True
    ).stdout.decode()
    assert clean_message(message) == expected


def commit_object(repo: Path) -> str:
    """The raw commit object of HEAD, the tree and parent lines aside (they differ by repo)."""
    raw = git(repo, "cat-file", "commit", "HEAD")
    return "\n".join(line for line in raw.split("\n") if not line.startswith(("tree", "parent")))


@pytest.mark.parametrize("message", MESSAGES[:9])
def test_the_commit_is_the_one_git_commit_makes(tmp_path: Path, message: str) -> None:
    repo = make_repo(tmp_path / "repo")
    twin = make_repo(tmp_path / "twin")
    for folder in (repo, twin):
        (folder / "a.md").write_text("a\n")
        store_at(folder).commit(["a.md"], "first")
        (folder / "a.md").write_text("a2\n")
        (folder / "b.md").write_text("b\n")
    before = git(repo, "rev-parse", "HEAD").strip()
    store = store_at(repo)

    sha = store.commit(["a.md", "b.md"], message)

    # The twin: the same change committed by `git commit -m` with the same identity and date.
    git(twin, "add", "a.md", "b.md")
    stamp = f"@{int(NOW.timestamp())} +0000"
    subprocess.run(
        ["git", "commit", "--quiet", "-m", message],
        cwd=twin,
        check=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "GIT_AUTHOR_NAME": store.identity.name,
            "GIT_AUTHOR_EMAIL": store.identity.email,
            "GIT_COMMITTER_NAME": store.identity.name,
            "GIT_COMMITTER_EMAIL": store.identity.email,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        },
    )
    assert sha == git(repo, "rev-parse", "refs/heads/main").strip()
    assert git(repo, "rev-parse", "HEAD^").strip() == before
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(twin, "rev-parse", "HEAD^{tree}")
    assert commit_object(repo) == commit_object(twin)
    assert git(repo, "reflog", "-1", "--format=%gs", "main") == git(
        twin, "reflog", "-1", "--format=%gs", "main"
    )
    assert git(repo, "reflog", "-1", "--format=%gs", "HEAD") == git(
        twin, "reflog", "-1", "--format=%gs", "HEAD"
    )
    assert git(repo, "status", "--porcelain") == ""


def test_a_commit_made_meanwhile_is_kept_and_memoryds_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.md").write_text("a\n")
    store = store_at(repo)
    store.commit(["a.md"], "first")
    (repo / "a.md").write_text("a2\n")
    run = Session.run

    def person_commits_first(self: Any, *args: str, **kwargs: Any) -> str:
        if args[0] == "commit-tree":  # a person's commit lands between memoryd's steps
            git(repo, "commit", "--quiet", "--allow-empty", "-m", "theirs")
        return run(self, *args, **kwargs)

    monkeypatch.setattr(Session, "run", person_commits_first)

    with pytest.raises(GitError, match="update-ref"):
        store.commit(["a.md"], "memoryd's")

    assert git(repo, "log", "-1", "--format=%s") == "theirs\n"
    assert git(repo, "rev-list", "--count", "HEAD") == "2\n"


def test_gits_housekeeping_runs_after_the_commit_as_after_git_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.md").write_text("a\n")
    store = store_at(repo)
    store.commit(["a.md"], "first")
    # git's automatic gc estimates the loose objects from the folder objects/17 alone: with
    # gc.auto 1, two loose objects there are enough to pack.
    git(repo, "config", "gc.auto", "1")
    git(repo, "config", "gc.autoDetach", "false")
    texts = [f"{n}\n" for n in range(100_000)]
    first, second = [t for t in texts if blob_name(t.encode(), "0" * 40).startswith("17")][:2]
    (repo / "a.md").write_text(first)
    (repo / "b.md").write_text(second)

    assert store.commit(["a.md", "b.md"], "second") is not None

    counts = git(repo, "count-objects", "-v").split("\n")
    assert "count: 0" in counts and "in-pack: 0" not in counts
