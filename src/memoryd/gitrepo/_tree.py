"""Trees, blobs and branch moves for the sync (`memoryd.sync._remote`), without git's
merge machinery.

memoryd never asks git to merge or rebase its files. It reads the trees it needs, builds the
merged tree itself (`memoryd.sync._merge`), writes it as a commit with `commit-tree` through a
private index file, and then moves the branch and the work tree to that commit. Everything runs
through `GitStore.plumbing`, so the fixed configuration of `memoryd.gitrepo._repository` applies.

Moving the branch is the only step that changes the repository a person sees, and it is made safe
to kill at any moment:

1. a marker `<git dir>/memoryd-sync.json` records the old commit, the new one, the branch and the
   paths that differ between them;
2. the branch moves (`update-ref` with the old value, so a concurrent move is refused);
3. each of those paths is set to the new commit's content, in the work tree and the index, but
   only where the work tree still holds the old commit's content (or already the new one): a
   file someone changed meanwhile is left as it is;
4. the marker is removed.

A start that finds the marker (`settle_interrupted_move`) redoes steps 2-4, which are idempotent,
or drops the marker when the branch never moved. So a SIGKILL leaves either the old commit or the
new one, never a work tree that looks like uncommitted edits to be filed as someone else's.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import GitError
from memoryd.gitrepo._repository import GitStore
from memoryd.gitrepo._support import SYNC_MARKER
from memoryd.logs import get_logger

log = get_logger("memoryd.store.gittree")  # the name its events always had

MARKER_NAME = SYNC_MARKER
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class Entry:
    """A file of a tree: its git mode and blob id."""

    mode: str
    blob: str


Tree = dict[str, Entry]  # repo-relative path -> entry


def read_tree(git: GitStore, commit: str | None) -> Tree:
    """Every file of `commit`'s tree, by repo-relative path (empty for None)."""
    if commit is None:
        return {}
    _status, output = git.plumbing("ls-tree", "-r", "-z", "--full-tree", commit)
    tree: Tree = {}
    for record in output.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind, blob = meta.decode().split()
        tree[path.decode("utf-8", "surrogateescape")] = Entry(mode, blob)
    return tree


def read_blob(git: GitStore, blob: str) -> bytes:
    return git.plumbing("cat-file", "blob", blob)[1]


def read_blobs(git: GitStore, blobs: Iterable[str]) -> dict[str, bytes]:
    """Many blobs with one git process (`cat-file --batch`)."""
    wanted = sorted(set(blobs))
    if not wanted:
        return {}
    output = git.plumbing("cat-file", "--batch", stdin="".join(f"{b}\n" for b in wanted).encode())[
        1
    ]
    result: dict[str, bytes] = {}
    position = 0
    for blob in wanted:
        end = output.index(b"\n", position)
        header = output[position:end].split()
        if len(header) != 3:
            raise GitError(f"git cat-file: cannot read object {blob}")
        size = int(header[2])
        result[blob] = output[end + 1 : end + 1 + size]
        position = end + 1 + size + 1  # the content is followed by a newline
    return result


def write_blob(git: GitStore, data: bytes) -> str:
    """Store `data` as a blob, byte for byte (no filter, no line-ending conversion)."""
    return (
        git.plumbing("hash-object", "-w", "--no-filters", "--stdin", stdin=data)[1].decode().strip()
    )


def write_blobs(git: GitStore, contents: list[bytes]) -> list[str]:
    """Store many contents as blobs with one git process; return their ids, in order."""
    if not contents:
        return []
    _work_tree, git_dir, _prefix = git.locations()
    with tempfile.TemporaryDirectory(prefix="memoryd-blobs-", dir=git_dir) as folder:
        names = []
        for number, data in enumerate(contents):
            name = Path(folder) / str(number)
            name.write_bytes(data)
            names.append(f"{name}\n")
        listing = "".join(names).encode()
        output = git.plumbing("hash-object", "-w", "--no-filters", "--stdin-paths", stdin=listing)
    return output[1].decode().split()


def merge_base(git: GitStore, first: str, second: str) -> str | None:
    status, output = git.plumbing("merge-base", first, second, check=False)
    return output.decode().strip() or None if status == 0 else None


def is_ancestor(git: GitStore, ancestor: str, descendant: str) -> bool:
    status, _ = git.plumbing("merge-base", "--is-ancestor", ancestor, descendant, check=False)
    return status == 0


def commit_tree(
    git: GitStore, tree: Mapping[str, Entry], parents: Iterable[str], message: str
) -> str:
    """Write `tree` as a commit with these parents and return its id; the repository's index
    and work tree are not touched (a private index file is used)."""
    _work_tree, git_dir, _prefix = git.locations()
    records = b"".join(
        f"{entry.mode} {entry.blob}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"
        for path, entry in sorted(tree.items())
    )
    handle, index_name = tempfile.mkstemp(prefix="memoryd-index-", dir=git_dir)
    os.close(handle)
    os.unlink(index_name)  # git creates it; an empty file is not a valid index
    try:
        env = {"GIT_INDEX_FILE": index_name}
        git.plumbing("update-index", "-z", "--index-info", stdin=records, env=env)
        tree_id = git.plumbing("write-tree", env=env)[1].decode().strip() if records else EMPTY_TREE
    finally:
        Path(index_name).unlink(missing_ok=True)
    arguments = ["commit-tree", tree_id]
    for parent in parents:
        arguments += ["-p", parent]
    return git.plumbing(*arguments, "-F", "-", stdin=message.encode())[1].decode().strip()


# -- moving the branch ----------------------------------------------------------------------


def blocking_paths(git: GitStore, old: str | None, new: str) -> list[str]:
    """The paths the move from `old` to `new` would change whose work-tree file holds neither
    side's content: someone's uncommitted change (or untracked file) there. The move is refused
    while there are any (it would overwrite them); changes elsewhere never block it."""
    before, after = read_tree(git, old), read_tree(git, new)
    paths = _changed(before, after)
    on_disk = _disk_blobs(git, paths)
    return [p for p in paths if on_disk[p] not in {_blob(before, p), _blob(after, p)}]


def move_branch(git: GitStore, branch: str, old: str | None, new: str) -> list[str]:
    """Move `branch` from `old` to `new` with the work tree (see the module docstring); return
    the paths left alone because someone changed them meanwhile."""
    before, after = read_tree(git, old), read_tree(git, new)
    paths = _changed(before, after)
    _work_tree, git_dir, _prefix = git.locations()
    marker = git_dir / MARKER_NAME
    document = {"branch": branch, "old": old, "new": new, "paths": paths}
    _write_marker(marker, document)
    git.plumbing("update-ref", "-m", "memoryd: sync", f"refs/heads/{branch}", new, old or "")
    kept = _settle(git, before, after, paths)
    marker.unlink(missing_ok=True)
    return kept


def settle_interrupted_move(git: GitStore) -> str:
    """Finish (the branch had moved) or drop (it had not) a move a killed memoryd left; return
    "none", "finished" or "dropped"."""
    _work_tree, git_dir, _prefix = git.locations()
    marker = git_dir / MARKER_NAME
    try:
        document = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "none"
    except ValueError:
        marker.unlink(missing_ok=True)
        log.warning("git.sync_marker_unreadable", marker=str(marker))
        return "dropped"
    branch, old, new = document["branch"], document["old"], document["new"]
    status, output = git.plumbing(
        "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False
    )
    current = output.decode().strip() if status == 0 else None
    if current == old:
        marker.unlink(missing_ok=True)
        log.warning("git.sync_recovered", action="dropped", branch=branch, kept=old)
        return "dropped"
    if current != new:
        marker.unlink(missing_ok=True)
        log.warning("git.sync_recovered", action="dropped", branch=branch, moved_to=current)
        return "dropped"
    kept = _settle(git, read_tree(git, old), read_tree(git, new), list(document["paths"]))
    marker.unlink(missing_ok=True)
    log.warning("git.sync_recovered", action="finished", branch=branch, commit=new, kept=kept)
    return "finished"


def _write_marker(marker: Path, document: Mapping[str, object]) -> None:
    temporary = marker.with_name(marker.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, marker)


def _changed(before: Tree, after: Tree) -> list[str]:
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def _blob(tree: Tree, path: str) -> str | None:
    entry = tree.get(path)
    return entry.blob if entry is not None else None


def _disk_blobs(git: GitStore, paths: list[str]) -> dict[str, str | None]:
    """Per repo-relative path, the blob id of what the work tree holds there: None when nothing,
    the link target's blob for a symbolic link, "folder" for a folder (never a side's blob)."""
    work_tree, _git_dir, _prefix = git.locations()
    result: dict[str, str | None] = {}
    files: list[str] = []
    for path in paths:
        target = work_tree / path
        if target.is_symlink():
            link = os.readlink(target).encode("utf-8", "surrogateescape")
            result[path] = _hash(git, link)
        elif target.is_dir():
            result[path] = "folder"
        elif target.is_file():
            files.append(path)
        else:
            result[path] = None
    if files:
        listing = "".join(f"{work_tree / path}\n" for path in files).encode(
            "utf-8", "surrogateescape"
        )
        output = git.plumbing("hash-object", "--no-filters", "--stdin-paths", stdin=listing)[1]
        result.update(zip(files, output.decode().split(), strict=True))
    return result


def _hash(git: GitStore, data: bytes) -> str:
    return git.plumbing("hash-object", "--no-filters", "--stdin", stdin=data)[1].decode().strip()


def _settle(git: GitStore, before: Tree, after: Tree, paths: list[str]) -> list[str]:
    """Set each path to `after` in the work tree and the index where the work tree holds
    `before`'s or `after`'s content; return the paths left alone."""
    work_tree, _git_dir, _prefix = git.locations()
    kept: list[str] = []
    records: list[bytes] = []
    disk = _disk_blobs(git, paths)
    contents = read_blobs(
        git,
        (
            entry.blob
            for path in paths
            if (entry := after.get(path)) is not None
            and entry.mode != "160000"
            and disk[path] in {_blob(before, path), entry.blob}
            and disk[path] != entry.blob
        ),
    )
    for path in paths:
        target = work_tree / path
        on_disk = disk[path]
        wanted = after.get(path)
        name = path.encode("utf-8", "surrogateescape")
        if on_disk not in {_blob(before, path), _blob(after, path)}:
            # Someone's change: the file stays as it is, on top of the new commit (the index
            # follows the commit, so the change shows as uncommitted, never as a staged revert).
            kept.append(path)
            log.warning("git.sync_kept_local", path=path)
            records.append(_index_record(wanted, name))
            continue
        if wanted is None:
            if os.path.lexists(target):
                target.unlink()
                _remove_empty_parents(target.parent, work_tree)
            records.append(b"0 " + b"0" * 40 + b"\t" + name + b"\0")
            continue
        if on_disk != wanted.blob and wanted.mode != "160000":  # a submodule's folder is its own
            _write_entry(target, wanted, contents[wanted.blob])
        records.append(f"{wanted.mode} {wanted.blob}\t".encode() + name + b"\0")
    if records:
        git.plumbing("update-index", "-z", "--index-info", stdin=b"".join(records))
        # Refresh the stat data of the files just written, so they do not show as modified.
        git.plumbing("update-index", "-q", "--refresh", check=False)
    return kept


def _index_record(entry: Entry | None, name: bytes) -> bytes:
    if entry is None:
        return b"0 " + b"0" * 40 + b"\t" + name + b"\0"
    return f"{entry.mode} {entry.blob}\t".encode() + name + b"\0"


def write_work_file(git: GitStore, path: str, data: bytes) -> None:
    """Replace the work tree's file at repo-relative `path` (a regular file) by `data`,
    atomically; the index is left as it is."""
    work_tree, _git_dir, _prefix = git.locations()
    target = work_tree / path
    mode = "100755" if os.access(target, os.X_OK) else "100644"
    _write_entry(target, Entry(mode, ""), data)


def _write_entry(target: Path, entry: Entry, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.memoryd-sync")
    temporary.unlink(missing_ok=True)
    if entry.mode == "120000":
        os.symlink(data.decode("utf-8", "surrogateescape"), temporary)
    else:
        temporary.write_bytes(data)
        os.chmod(temporary, 0o755 if entry.mode == "100755" else 0o644)
    os.replace(temporary, target)


def _remove_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
