"""Slugs and path confinement: the rules every store path depends on, checked as properties."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.errors import PathEscapeError
from memoryd.worktree._paths import MAX_SLUG_LENGTH, RESERVED_SLUGS, StorePaths, slugify

SLUG_SHAPE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@given(st.text())
def test_slugify_always_gives_a_safe_bounded_slug(name: str) -> None:
    slug = slugify(name)
    assert SLUG_SHAPE.match(slug), slug
    assert len(slug) <= MAX_SLUG_LENGTH
    assert slug not in RESERVED_SLUGS


@given(st.text())
def test_slugify_is_stable_and_idempotent(name: str) -> None:
    slug = slugify(name)
    assert slugify(name) == slug
    assert slugify(slug) == slug


@given(st.text(alphabet="abcdefghij-0123456789 ", min_size=1, max_size=30))
def test_slugify_keeps_plain_names_readable(name: str) -> None:
    plain = re.sub(r"[^a-z0-9]+", "-", name).strip("-")
    if plain and plain not in RESERVED_SLUGS:
        assert slugify(name) == plain


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Jane Doe", "jane-doe"),
        ("  Acme, Inc. ", "acme-inc"),
        ("José Álvarez", "jose-alvarez"),
        ("../../etc/passwd", "etc-passwd"),
        ("..", None),
        ("", None),
        ("con", None),
        ("people", None),
    ],
)
def test_slugify_examples(name: str, expected: str | None) -> None:
    slug = slugify(name)
    if expected is not None:
        assert slug == expected
    else:
        assert SLUG_SHAPE.match(slug)
        assert slug not in {"", "..", "con", "people"}


def test_distinct_unusable_names_keep_distinct_slugs() -> None:
    assert slugify("") != slugify("...") != slugify("日本")
    assert slugify("con") != slugify("CON!")


def test_a_very_long_name_is_cut_and_keeps_a_distinguishing_hash() -> None:
    long_a, long_b = "a" * 5000, "a" * 4999 + "b"
    assert len(slugify(long_a)) == MAX_SLUG_LENGTH
    assert slugify(long_a) != slugify(long_b)


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory: pytest.TempPathFactory) -> StorePaths:
    """A store with symlinks planted in it: one to a folder outside, one to a folder inside,
    one to a file, and a dangling one."""
    base = tmp_path_factory.mktemp("confinement")
    outside = base / "outside"
    outside.mkdir()
    root = base / "store"
    (root / "life" / "projects").mkdir(parents=True)
    (root / "memory").mkdir()
    (root / "memory" / "note.md").write_text("x\n")
    os.symlink(outside, root / "escape")
    os.symlink(root / "life", root / "memory" / "inner")
    os.symlink(root / "memory" / "note.md", root / "life" / "note-link.md")
    os.symlink(base / "missing", root / "life" / "projects" / "dangling")
    return StorePaths(root)


LINKS = ("escape", "inner", "note-link.md", "dangling")
PARTS = st.one_of(
    st.sampled_from(
        ["life", "projects", "memory", "..", ".", "", ".git", "note.md", "~", "/", *LINKS]
    ),
    st.text(min_size=1, max_size=12),
)


def _is_confined(paths: StorePaths, result: Path) -> bool:
    if result == paths.root or paths.root not in result.parents:
        return False
    current = paths.root
    for part in result.relative_to(paths.root).parts:
        current = current / part
        if current.is_symlink():
            return False
    return True


@settings(max_examples=400)
@given(st.lists(PARTS, min_size=0, max_size=6).map("/".join))
def test_resolve_never_leaves_the_root_nor_crosses_a_symlink(
    planted_store: StorePaths, relative: str
) -> None:
    try:
        result = planted_store.resolve(relative)
    except PathEscapeError:
        return
    assert _is_confined(planted_store, result), (relative, result)
    assert ".." not in result.parts


@pytest.mark.parametrize(
    "relative",
    [
        "../outside/x",
        "/etc/passwd",
        "life/../../outside",
        "escape/x.md",
        "memory/inner/projects/x.md",
        "life/note-link.md",
        "life/projects/dangling/items.json",
        ".git/config",
        "",
        ".",
        "life/x\x00y",
        "life/" + "x" * 300 + "/items.json",
    ],
)
def test_resolve_refuses_escapes_and_symlinks(planted_store: StorePaths, relative: str) -> None:
    with pytest.raises(PathEscapeError):
        planted_store.resolve(relative)


def test_resolve_accepts_plain_paths_not_yet_created(planted_store: StorePaths) -> None:
    result = planted_store.resolve("life/projects/new-one/items.json")
    assert result == planted_store.root / "life/projects/new-one/items.json"
    assert planted_store.relative(result).as_posix() == "life/projects/new-one/items.json"


def test_resolve_below_a_file_is_a_plain_path(planted_store: StorePaths) -> None:
    # Writing there fails later with an OS error; resolving it must not raise a foreign error.
    assert planted_store.resolve("memory/note.md/x") == planted_store.root / "memory/note.md/x"


def test_relative_refuses_a_path_outside(planted_store: StorePaths) -> None:
    with pytest.raises(PathEscapeError):
        planted_store.relative(planted_store.root.parent / "outside")
