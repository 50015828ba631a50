"""The git adapter on real temporary repositories: scoping, identity, empty commits, renames,
and the refusal of a store folder the enclosing repository ignores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.support.git_store import IDENTITY, NOW, git, make_repo, store_at

from memoryd.errors import EXIT_CONFIG, GitError, IgnoredStoreError
from memoryd.gitrepo._repository import find_work_tree
from memoryd.gitrepo._support import IgnoreRule, parse_ignore_rule


def committed_files(repo: Path, revision: str = "HEAD") -> set[str]:
    output = git(repo, "show", "--name-only", "--format=", revision)
    return {line for line in output.splitlines() if line}


def commit_count(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD").strip())


@pytest.fixture(autouse=True)
def _clean_git_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The helper `git()` must not pick up a developer's global hooks or identity variables.
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def test_commit_takes_only_the_named_paths(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.md").write_text("a\n")
    (repo / "b.md").write_text("b\n")
    store = store_at(repo)

    sha = store.commit(["a.md"], "add a")

    assert sha is not None and sha == git(repo, "rev-parse", "HEAD").strip()
    assert committed_files(repo) == {"a.md"}
    assert store.status().untracked == ("b.md",)


def test_nothing_to_commit_makes_no_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.md").write_text("a\n")
    store = store_at(repo)
    first = store.commit(["a.md"], "add a")

    assert store.commit(["a.md"], "again") is None
    assert store.commit(["never-existed.md"], "nothing") is None
    assert store.commit([], "nothing") is None
    assert store.head() == first
    assert commit_count(repo) == 1


def test_store_inside_a_larger_repository_never_commits_outside_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "tracked.txt").write_text("v1\n")
    git(repo, "add", "tracked.txt")
    git(repo, "commit", "--quiet", "-m", "someone's work")
    # Someone else's work in progress: one change staged, one not, one untracked.
    (repo / "tracked.txt").write_text("v2 staged\n")
    git(repo, "add", "tracked.txt")
    (repo / "staged-new.txt").write_text("new\n")
    git(repo, "add", "staged-new.txt")
    (repo / "untracked.txt").write_text("loose\n")
    store_root = repo / "notes" / "store"
    store_root.mkdir(parents=True)
    (store_root / "fact.md").write_text("a fact\n")
    store = store_at(store_root)

    sha = store.commit(["fact.md"], "memoryd commit")

    assert sha is not None
    assert committed_files(repo) == {"notes/store/fact.md"}
    assert git(repo, "show", "HEAD:tracked.txt") == "v1\n"
    # The other work is exactly as it was: still staged, still untracked.
    staged = git(repo, "diff", "--cached", "--name-only").split()
    assert sorted(staged) == ["staged-new.txt", "tracked.txt"]
    assert "?? untracked.txt" in git(repo, "status", "--porcelain")
    assert find_work_tree(store_root) == repo.resolve()


def test_first_commit_of_an_unborn_branch_leaves_staged_outside_work_alone(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "outside.txt").write_text("x\n")
    git(repo, "add", "outside.txt")
    (repo / "store").mkdir()
    (repo / "store" / "a.md").write_text("a\n")

    store_at(repo / "store").commit(["a.md"], "first")

    assert committed_files(repo) == {"store/a.md"}
    assert git(repo, "diff", "--cached", "--name-only").split() == ["outside.txt"]


def test_paths_outside_the_store_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = store_at(repo / "store")
    for bad in ("../outside.txt", "/etc/passwd", ".git/config", "a/../../b", ""):
        with pytest.raises(GitError):
            store.commit([bad], "escape")


def test_identity_is_the_configured_one_whatever_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Intruder")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "intruder@evil.invalid")
        monkeypatch.setenv(f"GIT_{role}_DATE", "2001-01-01T00:00:00+0000")
    (repo / "a.md").write_text("a\n")

    store_at(repo).commit(["a.md"], "identity")

    monkeypatch.delenv("GIT_AUTHOR_NAME")
    shown = git(repo, "log", "-1", "--format=%an|%ae|%cn|%ce|%at|%ct")
    stamp = str(int(NOW.timestamp()))
    assert shown.strip() == "|".join(
        [IDENTITY.name, IDENTITY.email, IDENTITY.name, IDENTITY.email, stamp, stamp]
    )


def test_environment_pointing_at_another_repository_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = make_repo(tmp_path / "decoy")
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy / ".git" / "index"))
    (repo / "a.md").write_text("a\n")

    sha = store_at(repo).commit(["a.md"], "here")

    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert sha == git(repo, "rev-parse", "HEAD").strip()
    decoy_head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=decoy, capture_output=True, check=False
    )
    assert decoy_head.returncode != 0  # the decoy got no commit


def test_hooks_do_not_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / "hook-ran"
    for hook in ("pre-commit", "commit-msg", "post-commit"):
        script = repo / ".git" / "hooks" / hook
        script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        script.chmod(0o755)
    (repo / "a.md").write_text("a\n")

    assert store_at(repo).commit(["a.md"], "no hooks") is not None
    assert not marker.exists()


def test_a_moved_folder_is_committed_as_a_rename(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    entity = repo / "life" / "projects" / "launch"
    entity.mkdir(parents=True)
    (entity / "summary.md").write_text("# Launch\n\nThe product launch.\n")
    (entity / "items.json").write_text("[]\n")
    store = store_at(repo)
    store.commit(["life/projects/launch"], "create")
    archived = repo / "life" / "archives" / "projects" / "launch"
    archived.parent.mkdir(parents=True)
    entity.rename(archived)

    assert store.status().deleted == (
        "life/projects/launch/items.json",
        "life/projects/launch/summary.md",
    )
    store.commit(["life/projects/launch", "life/archives/projects/launch"], "archive")

    renames = git(repo, "show", "-M", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(line.split("\t")[0][0] for line in renames if line) == ["R", "R"]
    assert store.status().clean


def test_status_lists_only_the_store_folder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store_root = repo / "store"
    store_root.mkdir()
    (store_root / "kept.md").write_text("1\n")
    (store_root / "gone.md").write_text("1\n")
    store = store_at(store_root)
    store.commit(["kept.md", "gone.md"], "base")
    (store_root / "kept.md").write_text("2\n")
    (store_root / "gone.md").unlink()
    (store_root / "sub").mkdir()
    (store_root / "sub" / "new file.md").write_text("new\n")
    (repo / "outside.md").write_text("not ours\n")
    (repo / "store-sibling").mkdir()
    (repo / "store-sibling" / "x.md").write_text("not ours either\n")

    status = store.status()

    assert status.modified == ("kept.md",)
    assert status.deleted == ("gone.md",)
    assert status.untracked == ("sub/new file.md",)


def test_init_creates_a_repository_only_when_needed(tmp_path: Path) -> None:
    fresh = store_at(tmp_path / "fresh")
    assert fresh.init() is True
    assert git(tmp_path / "fresh", "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert fresh.init() is False

    repo = make_repo(tmp_path / "repo")
    inner = store_at(repo / "store")
    assert inner.init() is False
    assert not (repo / "store" / ".git").exists()


def test_operations_outside_any_repository_raise_git_error(tmp_path: Path) -> None:
    store = store_at(tmp_path / "nowhere")
    (tmp_path / "nowhere").mkdir()
    with pytest.raises(GitError, match="not inside a git work tree"):
        store.status()
    assert store.work_tree_root() is None


def test_file_names_with_pattern_characters_are_taken_literally(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a*.md").write_text("star\n")
    (repo / "ab.md").write_text("plain\n")

    store_at(repo).commit(["a*.md"], "literal")

    assert committed_files(repo) == {"a*.md"}


def test_named_paths_are_committed_even_when_a_gitignore_matches_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("*.json\nmemory/\n")
    (repo / "store" / "memory").mkdir(parents=True)
    (repo / "store" / "items.json").write_text("[]\n")
    (repo / "store" / "memory" / "2026-03-04.md").write_text("note\n")
    (repo / "store" / "stray.json").write_text("{}\n")

    store_at(repo / "store").commit(["items.json", "memory/2026-03-04.md"], "ignored anyway")

    assert committed_files(repo) == {"store/items.json", "store/memory/2026-03-04.md"}
    assert store_at(repo / "store").status().clean  # ignored strays are nobody's edits


def test_find_commit_finds_the_latest_commit_with_a_trailer(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store = store_at(repo)
    assert store.find_commit("Memoryd-Run", "r1") is None  # unborn branch
    (repo / "a.md").write_text("1\n")
    first = store.commit(["a.md"], "one\n\nMemoryd-Run: r1\n")
    (repo / "a.md").write_text("2\n")
    store.commit(["a.md"], "two\n\nMemoryd-Run: r2\n")

    assert store.find_commit("Memoryd-Run", "r1") == first
    assert store.find_commit("Memoryd-Run", "r") is None  # whole lines only
    assert store.find_commit("Memoryd-Run", "r1", limit=1) is None


def test_restore_puts_files_back_as_head_has_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "store").mkdir()
    (repo / "store" / "kept.md").write_text("committed\n")
    (repo / "store" / "moved.md").write_text("committed too\n")
    store = store_at(repo / "store")
    store.commit(["kept.md", "moved.md"], "base")
    (repo / "store" / "kept.md").write_text("half-written by a killed run\n")
    (repo / "store" / "moved.md").unlink()
    (repo / "store" / "new.md").write_text("never committed\n")
    (repo / "store" / "foreign.md").write_text("someone's, not named\n")

    restored = store.restore(["kept.md", "moved.md", "new.md"])

    assert restored == ["kept.md", "moved.md", "new.md"]
    assert (repo / "store" / "kept.md").read_text() == "committed\n"
    assert (repo / "store" / "moved.md").read_text() == "committed too\n"
    assert not (repo / "store" / "new.md").exists()
    assert store.status().untracked == ("foreign.md",)


# -- a store folder the enclosing repository ignores ---------------------------------------


def nothing_staged_or_committed(repo: Path) -> bool:
    unborn = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    return unborn.returncode != 0 and git(repo, "ls-files") == ""


@pytest.mark.parametrize(
    ("rule_file", "rules", "store", "matched"),
    [
        (".gitignore", "build/\nnotes/\n", "notes/store", ("notes/", 2)),  # a parent folder
        (".gitignore", "store\n", "notes/store", ("store", 1)),  # the folder itself, any depth
        (".gitignore", "**/.data/\n", "bench/.data/rewrite/store-5", ("**/.data/", 1)),
        ("notes/.gitignore", "store/\n", "notes/store", ("store/", 1)),  # a nested rule file
        (".git/info/exclude", "/notes/store/\n", "notes/store", ("/notes/store/", 1)),
        # A folder inside an ignored one cannot be re-included (git's rule, not memoryd's).
        (".gitignore", "data/\n!data/store/\n", "data/store", ("data/", 1)),
    ],
)
def test_commit_refuses_a_store_folder_the_enclosing_repository_ignores(
    tmp_path: Path, rule_file: str, rules: str, store: str, matched: tuple[str, int]
) -> None:
    repo = make_repo(tmp_path / "repo")
    store_root = repo / store
    store_root.mkdir(parents=True)
    (repo / rule_file).write_text(rules)
    (store_root / "fact.md").write_text("a fact\n")

    with pytest.raises(IgnoredStoreError) as caught:
        store_at(store_root).commit(["fact.md"], "memoryd commit")

    error = caught.value
    pattern, line = matched
    assert error.exit_code == EXIT_CONFIG
    assert (error.store, error.repository) == (store_root.resolve(), repo.resolve())
    assert (error.pattern, error.source) == (pattern, f"{repo.resolve() / rule_file}:{line}")
    assert str(error).startswith(
        f"refusing to use the store at {store_root.resolve()}: the enclosing git repository "
        f"{repo.resolve()} ignores it (rule {pattern!r} at {repo.resolve() / rule_file}:{line})"
    )
    assert nothing_staged_or_committed(repo)


def test_a_store_folder_that_is_already_tracked_is_still_refused(tmp_path: Path) -> None:
    # An older memoryd force-added the store; the rule still says it does not belong.
    repo = make_repo(tmp_path / "repo")
    store_root = repo / "cache" / "store"
    store_root.mkdir(parents=True)
    (store_root / "fact.md").write_text("v1\n")
    store_at(store_root).commit(["fact.md"], "before the rule")
    (repo / ".gitignore").write_text("cache/\n")
    (store_root / "fact.md").write_text("v2\n")

    with pytest.raises(IgnoredStoreError):
        store_at(store_root).commit(["fact.md"], "after the rule")
    assert commit_count(repo) == 1


def test_init_refuses_an_ignored_store_folder_and_creates_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text(".data/\n")
    store = store_at(repo / ".data" / "store")

    with pytest.raises(IgnoredStoreError, match=r"rule '\.data/'"):
        store.init()
    assert not (repo / ".data").exists()
    assert store.ignore_rule() is not None


@pytest.mark.parametrize(
    "rules",
    [
        "",
        "*.md\nmemory/\n",  # patterns that match files inside the store, not the folder
        "data/*\n!data/store/\n",  # a folder re-included
        "st*\n!store/\n",  # the folder itself re-included
        "other-store/\nstore-sibling\n",
    ],
)
def test_a_store_folder_that_is_not_ignored_is_committed(tmp_path: Path, rules: str) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text(rules)
    store_root = repo / "data" / "store"
    (store_root / "memory").mkdir(parents=True)
    (store_root / "memory" / "2026-03-04.md").write_text("note\n")
    store = store_at(store_root)

    assert store.ignore_rule() is None
    assert store.commit(["memory/2026-03-04.md"], "kept") is not None
    assert committed_files(repo) == {"data/store/memory/2026-03-04.md"}


def test_a_store_that_is_its_own_repository_ignores_outer_rules(tmp_path: Path) -> None:
    outer = make_repo(tmp_path / "outer")
    (outer / ".gitignore").write_text("stores/\n")
    inner = make_repo(outer / "stores" / "memory")
    (inner / "fact.md").write_text("a fact\n")
    store = store_at(inner)

    assert store.ignore_rule() is None
    assert store.init() is False
    assert store.commit(["fact.md"], "own repository") is not None
    assert committed_files(inner) == {"fact.md"}
    assert nothing_staged_or_committed(outer)


def test_a_standalone_store_is_never_ignored(tmp_path: Path) -> None:
    store = store_at(tmp_path / "store")
    store.init()
    (tmp_path / "store" / ".gitignore").write_text("*\n")
    (tmp_path / "store" / "a.md").write_text("a\n")

    assert store.ignore_rule() is None
    assert store.commit(["a.md"], "standalone") is not None


def test_the_store_folder_name_is_taken_literally_when_checking_ignore_rules(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("axb/\n:odd\n")
    for name in ("a*b", "axb", ":odd"):
        (repo / name).mkdir()

    assert store_at(repo / "a*b").ignore_rule() is None  # not a pattern matching "axb"
    assert store_at(repo / "axb").ignore_rule() is not None
    assert store_at(repo / ":odd").ignore_rule() is not None  # not read as pathspec magic


def test_a_rule_from_the_global_excludes_file_is_named_by_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    excludes = tmp_path / "global-ignore"
    excludes.write_text("# scratch folders\nscratch/\n")
    settings = tmp_path / "gitconfig"
    settings.write_text(f"[core]\n\texcludesFile = {excludes}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(settings))
    repo = make_repo(tmp_path / "repo")

    rule = store_at(repo / "scratch" / "store").ignore_rule()

    assert rule is not None
    assert (rule.pattern, rule.source) == ("scratch/", f"{excludes}:2")


def test_check_ignore_output_is_read_as_a_rule_unless_it_is_negated(tmp_path: Path) -> None:
    # What `git check-ignore --verbose --no-index --stdin -z` prints for one path.
    ignored = "sub/.gitignore\x003\x00cache/\x00:(top)sub/cache/store/\x00"
    negated = ".gitignore\x002\x00!keep\x00:(top)keep/\x00"

    assert parse_ignore_rule(ignored, tmp_path) == IgnoreRule(
        "cache/", f"{tmp_path / 'sub' / '.gitignore'}:3"
    )
    assert parse_ignore_rule(negated, tmp_path) is None
    assert parse_ignore_rule("", tmp_path) is None


def test_a_commit_with_nothing_else_staged_records_the_paths_and_leaves_the_index_clean(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.md").write_text("a\n")
    (repo / "gone.md").write_text("gone\n")
    store = store_at(repo)
    store.commit(["a.md", "gone.md"], "first")
    (repo / "a.md").write_text("a2\n")
    (repo / "gone.md").unlink()
    (repo / "new.md").write_text("new\n")
    (repo / "loose.md").write_text("not named\n")

    sha = store.commit(["a.md", "gone.md", "new.md"], "second")

    assert sha is not None
    changes = git(repo, "show", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(line for line in changes if line) == ["A\tnew.md", "D\tgone.md", "M\ta.md"]
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert store.status().untracked == ("loose.md",)


def test_a_change_staged_by_someone_in_the_store_is_not_committed_with_memoryds(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.md").write_text("a\n")
    (repo / "theirs.md").write_text("v1\n")
    store = store_at(repo)
    store.commit(["a.md", "theirs.md"], "first")
    (repo / "theirs.md").write_text("v2, staged by a person\n")
    git(repo, "add", "theirs.md")
    (repo / "a.md").write_text("a2\n")

    assert store.commit(["a.md"], "memoryd's") is not None

    assert committed_files(repo) == {"a.md"}
    assert git(repo, "diff", "--cached", "--name-only").split() == ["theirs.md"]


def test_changed_since_names_the_store_paths_a_commit_range_changed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    store_root = repo / "notes" / "store"
    store_root.mkdir(parents=True)
    (store_root / "a.md").write_text("a\n")
    (store_root / "b.md").write_text("b\n")
    store = store_at(store_root)
    first = store.commit(["a.md", "b.md"], "first")
    assert first is not None
    (store_root / "a.md").write_text("a2\n")
    (store_root / "b.md").unlink()
    (repo / "outside.txt").write_text("not the store's\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "by hand")

    assert store.changed_since(first) == ["a.md", "b.md"]
    assert store.changed_since(store.head() or "") == []
    assert store.changed_since("0" * 40) is None
    assert store.changed_since("--output=/tmp/x") is None


def _commands(trace: Path) -> list[str]:
    """The git commands a GIT_TRACE2_EVENT file recorded, by name."""
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return [event["name"] for event in events if event["event"] == "cmd_name"]


def test_files_are_staged_one_by_one_and_folders_as_pathspecs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "life").mkdir()
    (repo / "life/a.md").write_text("a\n")
    (repo / "life/gone.md").write_text("gone\n")
    store = store_at(repo)
    store.commit(["life/a.md", "life/gone.md"], "first")
    (repo / "life/a.md").write_text("a2\n")
    (repo / "life/gone.md").unlink()
    trace = tmp_path / "files.trace"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))

    assert store.commit(["life/a.md", "life/gone.md"], "files") is not None
    # Each path looked up in the index, not every entry matched against every pathspec.
    assert "update-index" in _commands(trace)
    assert "add" not in _commands(trace)

    (repo / "life/folder").mkdir()
    (repo / "life/folder/b.md").write_text("b\n")
    trace = tmp_path / "folder.trace"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert store.commit(["life/folder"], "a folder") is not None
    assert "add" in _commands(trace)
    assert committed_files(repo) == {"life/folder/b.md"}
    assert store.status().clean


def test_a_file_where_a_tracked_folder_was_replaces_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "life/x").mkdir(parents=True)
    (repo / "life/x/a.md").write_text("a\n")
    store = store_at(repo)
    store.commit(["life/x"], "a folder")
    (repo / "life/x/a.md").unlink()
    (repo / "life/x").rmdir()
    (repo / "life/x").write_text("now a file\n")

    # `update-index` refuses a file over a tracked folder; `add` stages both changes.
    assert store.commit(["life/x"], "a file") is not None

    changes = git(repo, "show", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(line for line in changes if line) == ["A\tlife/x", "D\tlife/x/a.md"]
    assert store.status().clean
