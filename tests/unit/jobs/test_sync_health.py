"""The `sync` block of `memoryd status`, on real repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memoryd.jobs.sync_health import sync_lines, sync_report
from memoryd.settings import Settings, parse_settings


def settings_for(store: Path, *, push: bool = True) -> Settings:
    return parse_settings(
        {
            "store": {"path": str(store)},
            "state": {"path": str(store.parent / "state")},
            "llm": {"provider": "markers"},
            "git": {"push": push},
            "agents": [],
        }
    )


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_nothing_is_reported_for_a_store_that_is_not_shared(tmp_path: Path) -> None:
    assert sync_report(settings_for(tmp_path / "s", push=False)) is None
    assert sync_lines(None) == []


def test_a_store_never_fetched_counts_every_commit_as_unpushed(tmp_path: Path) -> None:
    store = tmp_path / "s"
    store.mkdir()
    git(store, "init", "--quiet", "-b", "main")
    git(store, "commit", "--quiet", "--allow-empty", "-m", "one")
    git(store, "commit", "--quiet", "--allow-empty", "-m", "two")
    report = sync_report(settings_for(store))
    assert report is not None
    assert report["ahead"] == 2 and report["behind"] is None
    assert report["last_push"] is None and not report["failing"]
    assert "2 unpushed, ? behind" in sync_lines(report)[0]
    git(store, "checkout", "--quiet", "--detach")
    detached = sync_report(settings_for(store))
    assert detached is not None and detached["branch"] is None
    assert "(detached HEAD)" in sync_lines(detached)[0]


def test_a_store_outside_any_repository_says_it_cannot_tell(tmp_path: Path) -> None:
    report = sync_report(settings_for(tmp_path / "nowhere"))
    assert report is not None and "error" in report
    assert sync_lines(report)[0].startswith("sync with origin: cannot tell")


def test_one_failed_push_is_shown_without_alarm() -> None:
    report = {
        "remote": "origin",
        "branch": "main",
        "ahead": 1,
        "behind": 0,
        "last_pull": None,
        "last_push": None,
        "push_failures": 1,
        "last_push_error": "unreachable",
        "failing": False,
    }
    assert sync_lines(report)[1] == "push failed 1 jobs in a row (retried each job)"


def test_what_stops_memoryd_from_writing_is_read_from_the_git_directory(tmp_path: Path) -> None:
    from memoryd.jobs.sync_health import repository_problem

    store = tmp_path / "repo" / "store"
    store.mkdir(parents=True)
    repo = store.parent
    git(repo, "init", "--quiet", "-b", "main")
    assert repository_problem(store) is None
    git(repo, "commit", "--quiet", "--allow-empty", "-m", "one")
    assert repository_problem(store) is None
    git(repo, "checkout", "--quiet", "--detach")
    assert "detached" in (repository_problem(store) or "")
    git(repo, "checkout", "--quiet", "main")
    (repo / ".git" / "MERGE_HEAD").write_text("0" * 40 + "\n", encoding="utf-8")
    assert "merge is in progress" in (repository_problem(store) or "")
    linked = tmp_path / "linked"
    (repo / ".git" / "MERGE_HEAD").unlink()
    git(repo, "worktree", "add", "--quiet", "--detach", str(linked))
    assert "detached" in (repository_problem(linked / "not-yet") or "")
    assert repository_problem(tmp_path / "elsewhere") is None


def test_hosts_sharing_a_range_of_fact_ids_are_found_from_their_records(tmp_path: Path) -> None:
    from memoryd.jobs.sync_health import host_code_clashes
    from memoryd.store.items import host_id_code

    assert host_id_code("host-4") == host_id_code("host-93")  # a known clash
    hosts = tmp_path / ".memoryd" / "hosts"
    hosts.mkdir(parents=True)
    for name in ("host-4", "host-93", "host-5"):
        (hosts / f"{name}.json").write_text(f'{{"host": "{name}"}}', encoding="utf-8")
    (hosts / "broken.json").write_text("not json", encoding="utf-8")
    assert host_code_clashes(tmp_path, "host-93") == ["host-4"]
    assert host_code_clashes(tmp_path, "host-5") == []
