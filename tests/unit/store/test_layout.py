"""The store skeleton and its format version, on real temporary git repositories."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memoryd.errors import IgnoredStoreError, StoreError, StoreFormatError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.store.layout import (
    CURRENT_FORMAT,
    FORMAT_FILE,
    STORE_ID_FILE,
    InitResult,
    init_store,
    open_store,
    read_format,
)

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
SKELETON = [
    ".memoryd-format",
    ".memoryd/store-id",
    "MEMORY.md",
    "agents/README.md",
    "life/archives/README.md",
    "life/areas/README.md",
    "life/areas/companies/README.md",
    "life/areas/people/README.md",
    "life/index.md",
    "life/projects/README.md",
    "life/resources/README.md",
    "memory/README.md",
]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(autouse=True)
def _clean_git_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The helper `git()` must not follow variables pointing at another repository or index.
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def init(path: Path) -> InitResult:
    return init_store(
        path, "MEMORY.md", "agents", "memoryd", "memoryd@test.invalid", clock=lambda: NOW
    )


def tree_listing(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.relative_to(root).parts
    )


def test_init_creates_the_skeleton_a_repository_and_one_commit(tmp_path: Path) -> None:
    root = tmp_path / "store"

    result = init_store(root, "MEMORY.md", "agents", "memoryd", "m@test.invalid", clock=lambda: NOW)

    assert result.created_repository
    assert list(result.created) == SKELETON
    assert result.commit == git(root, "rev-parse", "HEAD").strip()
    assert sorted(git(root, "ls-files").split()) == SKELETON
    assert git(root, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(root, "log", "-1", "--format=%an <%ae>").strip() == "memoryd <m@test.invalid>"
    assert (root / FORMAT_FILE).read_text() == f"{CURRENT_FORMAT}\n"
    assert (root / "MEMORY.md").read_text().startswith("# Tacit knowledge\n")
    assert (root / "life" / "index.md").read_text().startswith("# Index\n")
    assert "person" in (root / "life/areas/people/README.md").read_text()


def test_init_again_changes_nothing_and_makes_no_commit(tmp_path: Path) -> None:
    root = tmp_path / "store"
    init(root)
    head, tree = git(root, "rev-parse", "HEAD"), tree_listing(root)
    (root / "MEMORY.md").write_text("# Tacit knowledge\n\n- edited by the user\n")

    again = init_store(root, "MEMORY.md", "agents", "memoryd", "m@x.invalid", clock=lambda: NOW)

    assert again.commit is None and again.created == () and not again.created_repository
    assert git(root, "rev-parse", "HEAD") == head
    assert tree_listing(root) == tree
    assert "edited by the user" in (root / "MEMORY.md").read_text()


def test_init_is_deterministic_but_for_the_store_id(tmp_path: Path) -> None:
    init(tmp_path / "one")
    init(tmp_path / "two")

    def listing(name: str) -> list[str]:
        lines = git(tmp_path / name, "ls-tree", "-r", "HEAD").splitlines()
        return [line for line in lines if not line.endswith("\t" + STORE_ID_FILE)]

    assert listing("one") == listing("two")
    ids = [(tmp_path / name / STORE_ID_FILE).read_text() for name in ("one", "two")]
    assert ids[0] != ids[1]
    assert all(len(text.strip()) == 32 for text in ids)


def test_init_completes_a_first_run_killed_before_its_commit(tmp_path: Path) -> None:
    root = tmp_path / "store"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "life").mkdir()
    (root / "life" / "index.md").write_text("# Index\n\nhalf-made\n")

    result = init(root)

    assert result.commit is not None
    assert (root / "life" / "index.md").read_text() == "# Index\n\nhalf-made\n"
    assert "life/index.md" in git(root, "ls-files").split()
    assert git(root, "status", "--porcelain") == ""


def test_init_inside_a_larger_repository_commits_only_the_store(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "work.txt").write_text("staged by someone\n")
    git(repo, "add", "work.txt")
    (repo / "loose.txt").write_text("untracked\n")

    result = init_store(
        repo / "memory-store", "MEMORY.md", "skills", "memoryd", "m@x.invalid", clock=lambda: NOW
    )

    assert not result.created_repository
    assert not (repo / "memory-store" / ".git").exists()
    files = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert all(name.startswith("memory-store/") for name in files)
    assert "memory-store/skills/README.md" in files
    assert git(repo, "diff", "--cached", "--name-only").split() == ["work.txt"]


def test_a_newer_format_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    root = tmp_path / "store"
    init(root)
    (root / FORMAT_FILE).write_text("7\n")
    head = git(root, "rev-parse", "HEAD")

    with pytest.raises(StoreFormatError) as caught:
        open_store(root)
    assert (
        "written by a newer memoryd (format 7); this memoryd reads format 1; upgrade memoryd"
        in (str(caught.value))
    )
    with pytest.raises(StoreFormatError):
        init(root)
    assert (root / FORMAT_FILE).read_text() == "7\n"
    assert git(root, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("marker", ["one\n", "-1\n", "", "1.5\n", "\u0661\n"])
def test_an_unreadable_marker_is_a_format_error(tmp_path: Path, marker: str) -> None:
    root = tmp_path / "store"
    root.mkdir()
    (root / FORMAT_FILE).write_text(marker)
    with pytest.raises(StoreFormatError, match="format"):
        open_store(root)


def test_an_older_store_is_migrated_and_the_migration_committed(tmp_path: Path) -> None:
    root = tmp_path / "store"
    init(root)
    (root / FORMAT_FILE).unlink()
    git(root, "commit", "--quiet", "-am", "a format-0 store: life/ but no marker")
    assert read_format(root) == 0
    store = GitStore(root, GitIdentity("memoryd", "m@x.invalid"), lambda: NOW)

    info = open_store(root, store)

    assert info.format_version == CURRENT_FORMAT and info.migrated_from == 0
    assert (root / FORMAT_FILE).read_text() == "1\n"
    assert info.migration_commit == git(root, "rev-parse", "HEAD").strip()
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == [FORMAT_FILE]
    assert open_store(root, store).migrated_from is None


def test_a_folder_that_is_no_store_is_not_opened(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="memoryd init"):
        open_store(tmp_path)


def test_opening_sweeps_leftover_temporary_files(tmp_path: Path) -> None:
    root = tmp_path / "store"
    init(root)
    leftover = root / "life" / ".index.md.k3j2.tmp"
    leftover.write_text("half-written\n")

    info = open_store(root)

    assert not leftover.exists()
    assert info.swept == (leftover.resolve(),)
    assert (root / "life" / "index.md").exists()


# -- a store inside a larger repository that ignores it ---------------------------------------


def larger_repository(path: Path, gitignore: str) -> Path:
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch=main")
    (path / ".gitignore").write_text(gitignore)
    git(path, "add", ".gitignore")
    git(path, "-c", "user.name=Someone", "-c", "user.email=s@x.invalid", "commit", "-qm", "base")
    return path


def test_init_refuses_a_store_the_enclosing_repository_ignores(tmp_path: Path) -> None:
    repo = larger_repository(tmp_path / "project", "benchmarks/.data/\n")
    root = repo / "benchmarks" / ".data" / "rewrite" / "store-250"

    with pytest.raises(IgnoredStoreError) as caught:
        init(root)

    assert str(caught.value) == (
        f"refusing to use the store at {root.resolve()}: the enclosing git repository "
        f"{repo.resolve()} ignores it (rule 'benchmarks/.data/' at {repo.resolve()}/.gitignore:1),"
        " and memoryd does not force ignored files into a repository's history; move the store "
        f"out of the ignored folder (store.path), make it a repository of its own (git init "
        f"{root.resolve()}), or remove the rule"
    )
    assert caught.value.exit_code == 78
    assert not (repo / "benchmarks").exists()  # nothing created
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"  # nothing committed
    assert git(repo, "status", "--porcelain", "--ignored") == ""


def test_init_and_open_refuse_a_store_that_became_ignored(tmp_path: Path) -> None:
    repo = larger_repository(tmp_path / "project", "")
    root = repo / "cache" / "store"
    init(root)
    (repo / ".gitignore").write_text("cache/\n")
    head = git(repo, "rev-parse", "HEAD")
    leftover = root / "life" / ".index.md.k3j2.tmp"
    leftover.write_text("half-written\n")

    with pytest.raises(IgnoredStoreError):
        init(root)
    with pytest.raises(IgnoredStoreError):
        open_store(root, GitStore(root, GitIdentity("memoryd", "m@x.invalid"), lambda: NOW))
    assert leftover.exists()  # refused before anything was touched
    assert git(repo, "rev-parse", "HEAD") == head


def test_init_inside_a_larger_repository_commits_store_files_its_rules_match(
    tmp_path: Path,
) -> None:
    # The rules are about other files; the store folder itself is not ignored, so memoryd's own
    # files are committed even where a pattern matches them.
    repo = larger_repository(tmp_path / "project", "*.md\nmemory/\nbuild/\n")

    result = init(repo / "notes")

    assert result.commit is not None
    files = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == [f"notes/{name}" for name in SKELETON]
    assert init(repo / "notes").commit is None  # idempotent


def test_a_store_with_its_own_repository_may_sit_in_an_ignored_folder(tmp_path: Path) -> None:
    repo = larger_repository(tmp_path / "project", "stores/\n")
    root = repo / "stores" / "memory"
    root.mkdir(parents=True)
    git(root, "init", "--quiet", "--initial-branch=main")  # the fix the refusal suggests

    result = init(root)

    assert result.commit == git(root, "rev-parse", "HEAD").strip()
    assert sorted(git(root, "ls-files").split()) == SKELETON
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert init(root).commit is None


def test_opening_without_the_sweep_leaves_the_store_unwalked(tmp_path: Path) -> None:
    root = tmp_path / "store"
    init(root)
    leftover = root / "life" / ".index.md.k3j2.tmp"
    leftover.write_text("half-written\n")

    info = open_store(root, sweep=False)

    assert leftover.exists()  # left to the heartbeat's foreign-edits step
    assert info.swept == ()
