"""The store's status from git's untracked cache (`GitStore.status`): every change a person
makes is still reported, file by file, heartbeat after heartbeat."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.git_store import git, make_repo, store_at

from memoryd.gitrepo._support import StoreStatus


def index_extensions(repo: Path) -> bytes:
    return (repo / ".git" / "index").read_bytes()


def test_the_index_keeps_the_untracked_cache(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.md").write_text("a\n")
    git(repo, "add", "a.md")
    assert b"UNTR" not in index_extensions(repo)  # a person's git does not add it
    store = store_at(repo)

    store.status()

    assert b"UNTR" in index_extensions(repo)
    store.commit(["a.md"], "first")  # memoryd's own commits keep it, a person's too
    assert b"UNTR" in index_extensions(repo)
    (repo / "a.md").write_text("a2\n")
    git(repo, "commit", "--quiet", "-am", "by hand")
    assert b"UNTR" in index_extensions(repo)


def test_every_change_is_reported_while_the_cache_is_in_use(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for folder in ("life/people/ann", "life/people/bob", "notes"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "entity.md").write_text(f"{folder}\n")
    store = store_at(repo)
    store.commit(["life", "notes"], "first")
    assert store.status() == StoreStatus((), (), ())

    # A file added in a folder the cache knows, a new folder two levels deep, an edit, a
    # deletion; each status after the last commit.
    (repo / "life/people/ann/extra.md").write_text("new\n")
    assert store.status() == StoreStatus((), ("life/people/ann/extra.md",), ())
    (repo / "life/people/cyd/deep").mkdir(parents=True)
    (repo / "life/people/cyd/deep/x.md").write_text("x\n")
    (repo / "life/people/cyd/y.md").write_text("y\n")
    assert store.status().untracked == (
        "life/people/ann/extra.md",
        "life/people/cyd/deep/x.md",
        "life/people/cyd/y.md",
    )
    (repo / "notes/entity.md").write_text("edited\n")
    (repo / "life/people/bob/entity.md").unlink()
    status = store.status()
    assert status.modified == ("notes/entity.md",)
    assert status.deleted == ("life/people/bob/entity.md",)

    store.commit(["life", "notes"], "second")
    assert store.status() == StoreStatus((), (), ())
    # An edit that keeps the size and the modification time's second is still seen.
    before = os.stat(repo / "notes/entity.md")
    (repo / "notes/entity.md").write_text("EDITED\n")
    os.utime(repo / "notes/entity.md", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert store.status().modified == ("notes/entity.md",)
    # An untracked file in a folder memoryd itself just committed to.
    (repo / "life/people/ann/later.md").write_text("later\n")
    assert store.status().untracked == ("life/people/ann/later.md",)
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == (
        " M notes/entity.md\n?? life/people/ann/later.md\n"
    )
