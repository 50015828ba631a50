"""The walk of a source path: the same files as `glob` where no link is involved, and safe."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

from memoryd.sources.discovery import LINK_OUTSIDE, NOT_REGULAR, survey


def every_file(folder: str, name: str) -> bool:
    return True


TREE = [
    "a/x.jsonl",
    "a/b/x.jsonl",
    "a/b/c/x.jsonl",
    "a/b/c/y.md",
    "a/.hidden/x.jsonl",
    "a/.x.jsonl",
    "d/b/x.jsonl",
    "top.jsonl",
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for relative in TREE:
        path = tmp_path / "root" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n", encoding="utf-8")
    return tmp_path / "root"


@pytest.mark.parametrize(
    "pattern",
    [
        "**/*.jsonl",
        "a/**/x.jsonl",
        "*/b/*.jsonl",
        "**",
        "a/**",
        "a/b/**/*",
        "[ad]/*/x.jsonl",
        "a/.*",
        "nothing/*/x.jsonl",
    ],
)
def test_a_glob_finds_what_glob_finds(tree: Path, pattern: str) -> None:
    spec = os.path.join(str(tree), pattern)
    expected = sorted(path for path in glob.glob(spec, recursive=True) if os.path.isfile(path))
    found = survey(spec, every_file)
    assert found.files == expected
    assert found.skipped == []
    assert found.unreadable is None


def test_the_walk_skips_git_folders_and_dangling_links(tree: Path) -> None:
    (tree / ".git").mkdir()
    (tree / ".git" / "x.jsonl").write_text("{}\n", encoding="utf-8")
    (tree / "gone.jsonl").symlink_to(tree / "never-there.jsonl")
    found = survey(str(tree), lambda folder, name: name.endswith(".jsonl"))
    assert not any("/.git/" in path for path in found.files)
    assert str(tree / "gone.jsonl") not in found.files
    assert found.skipped == []


def test_links_to_folders_and_special_files_are_not_followed(tree: Path, tmp_path: Path) -> None:
    (tree / "inside-dir.jsonl").symlink_to(tree / "a", target_is_directory=True)
    (tree / "outside-dir").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(tree / "pipe.data")
    (tree / "pipe.jsonl").symlink_to(tree / "pipe.data")
    found = survey(str(tree), lambda folder, name: name.endswith(".jsonl"))
    assert sorted(found.skipped) == [
        (str(tree / "inside-dir.jsonl"), NOT_REGULAR),
        (str(tree / "pipe.jsonl"), NOT_REGULAR),
    ]
    assert not any(path.startswith(str(tree / "outside-dir")) for path in found.files)
    glob_links = survey(str(tree / "*.jsonl"), every_file)
    assert (str(tree / "pipe.jsonl"), NOT_REGULAR) in glob_links.skipped
    (tree / "out.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    (tmp_path / "elsewhere.jsonl").write_text("{}\n", encoding="utf-8")
    assert (str(tree / "out.jsonl"), LINK_OUTSIDE) in survey(str(tree), every_file).skipped


def test_a_source_path_that_is_a_file_a_fifo_or_missing(tree: Path) -> None:
    assert survey(str(tree / "top.jsonl"), every_file).files == [str(tree / "top.jsonl")]
    assert survey(str(tree / "missing"), every_file).files == []
    assert survey(str(tree / "missing" / "*.jsonl"), every_file).unreadable is None
    os.mkfifo(tree / "fifo")
    assert survey(str(tree / "fifo"), every_file).unreadable == NOT_REGULAR + " or folder"
    not_a_folder = survey(str(tree / "top.jsonl" / "*.jsonl"), every_file)
    assert not_a_folder.files == []
