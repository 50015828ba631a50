"""Merging two commits by meaning into a third (for `memoryd.sync._remote`): no git merge.

The remote's tree is the starting point; every path this host changed since the common ancestor
is taken as it is when the remote did not change it, and merged by `memoryd.sync._merge` when both
did. Entity folders are matched by slug first, so an entity moved (archived or reactivated) on
one side and changed on the other is merged at its new place. Blobs are read and written in bulk
(one git process each), and the result is written as a merge commit of the two (first parent:
the remote's), message `memoryd: merge <remote>/<branch> by meaning`, trailer `Memoryd-Sync:
merge`. A real contradiction keeps the remote's version and logs `git.merge_kept_remote` with
the blob of this host's version, which stays reachable through the merge's second parent.
"""

from __future__ import annotations

from memoryd import gitrepo
from memoryd.gitrepo import Entry, GitStore, Tree
from memoryd.logs import get_logger
from memoryd.sync._merge import entity_folders, merge_file, relocate, relocations
from memoryd.sync._trailer import SYNC_TRAILER

log = get_logger("memoryd.store.merge_tree")  # the name its events always had


def merge_commit(git: GitStore, ours: str, theirs: str, name: str) -> str:
    """A commit of the remote's tree with this host's changes re-applied by meaning."""
    base = gitrepo.merge_base(git, ours, theirs)
    _work_tree, _git_dir, prefix = git.locations()
    trees = [gitrepo.read_tree(git, commit) for commit in (base, ours, theirs)]
    base_tree, our_tree, their_tree = _relocated(trees, prefix)
    merged: Tree = dict(their_tree)
    conflicting: list[str] = []
    for path in sorted(set(base_tree) | set(our_tree) | set(their_tree)):
        before, mine, remote = base_tree.get(path), our_tree.get(path), their_tree.get(path)
        if mine in (before, remote):
            continue
        if remote == before:
            _put(merged, path, mine)
        else:
            conflicting.append(path)
    blobs = gitrepo.read_blobs(
        git,
        (
            entry.blob
            for path in conflicting
            for entry in (base_tree.get(path), our_tree.get(path), their_tree.get(path))
            if entry is not None
        ),
    )

    def content(entry: Entry | None) -> bytes | None:
        return None if entry is None else blobs[entry.blob]

    results = {
        path: merge_file(
            _store_relative(path, prefix),
            content(base_tree.get(path)),
            content(our_tree.get(path)),
            content(their_tree.get(path)),
        )
        for path in conflicting
    }
    written = [path for path in conflicting if results[path].data is not None]
    ids = gitrepo.write_blobs(git, [results[path].data or b"" for path in written])
    new_blobs = dict(zip(written, ids, strict=True))
    contradictions = 0
    for path in conflicting:
        mine, remote = our_tree.get(path), their_tree.get(path)
        mode = (mine or remote or Entry("100644", "")).mode
        _put(merged, path, Entry(mode, new_blobs[path]) if path in new_blobs else None)
        for problem in results[path].contradictions:
            contradictions += 1
            log.warning(
                "git.merge_kept_remote",
                path=path,
                detail=problem,
                ours=None if mine is None else mine.blob,
            )
    message = (
        f"memoryd: merge {name} by meaning ({contradictions} contradiction(s) kept the remote's)"
        f"\n\n{SYNC_TRAILER}: merge\n"
    )
    return gitrepo.commit_tree(git, merged, [theirs, ours], message)


def _relocated(trees: list[Tree], prefix: str) -> tuple[Tree, Tree, Tree]:
    """The three trees with each entity folder moved where the merged entity lives."""
    stored = [
        {rel: path for path in tree if (rel := _store_relative(path, prefix)) is not None}
        for tree in trees
    ]
    folders = [entity_folders(paths) for paths in stored]
    target = relocations(*folders)
    moved = []
    for tree, side_folders in zip(trees, folders, strict=True):
        result: Tree = {}
        for path, entry in tree.items():
            relative = _store_relative(path, prefix)
            if relative is None:
                result[path] = entry
                continue
            relative = relocate(relative, side_folders, target)
            result[f"{prefix}/{relative}" if prefix else relative] = entry
        moved.append(result)
    return moved[0], moved[1], moved[2]


def _put(tree: Tree, path: str, entry: Entry | None) -> None:
    if entry is None:
        tree.pop(path, None)
    else:
        tree[path] = entry


def _store_relative(path: str, prefix: str) -> str | None:
    if not prefix:
        return path
    return path[len(prefix) + 1 :] if path.startswith(prefix + "/") else None


def regenerate_index(git: GitStore) -> None:
    """`life/index.md` is derived: after a merge it is written again from the merged catalogue."""
    from memoryd.store.catalog import EntityCatalog  # noqa: PLC0415 - only after a merge
    from memoryd.store.index import INDEX_PATH, write_index  # noqa: PLC0415
    from memoryd.worktree import UnitOfWork  # noqa: PLC0415

    uow = UnitOfWork(git)
    if not uow.exists(INDEX_PATH):
        return
    write_index(uow, EntityCatalog.load(uow))
    if uow.plan():
        uow.apply_and_commit(
            "memoryd: regenerate life/index.md after a merge", {SYNC_TRAILER: "index"}
        )


def carry_local_edits(
    git: GitStore, old: str | None, new: str, paths: list[str]
) -> dict[str, bytes]:
    """For uncommitted edits to files that the move from `old` to `new` changes: the content each
    file gets with the remote's change and the edit on top (the person's side wins), for the
    files where that merge has no contradiction and keeps every line the edit added. Files
    outside the store, added or removed by either side, or not plain text are left out."""
    if not paths or old is None:
        return {}
    work_tree, _git_dir, prefix = git.locations()
    before, after = gitrepo.read_tree(git, old), gitrepo.read_tree(git, new)
    candidates = [
        path
        for path in paths
        if path in before
        and path in after
        and _store_relative(path, prefix) is not None
        and (work_tree / path).is_file()
        and not (work_tree / path).is_symlink()
    ]
    blobs = gitrepo.read_blobs(
        git, [entry.blob for p in candidates for entry in (before[p], after[p])]
    )
    carried: dict[str, bytes] = {}
    for path in candidates:
        edited = (work_tree / path).read_bytes()
        base, remote = blobs[before[path].blob], blobs[after[path].blob]
        result = merge_file(_store_relative(path, prefix), base, remote, edited)
        if result.data is None or result.contradictions:
            continue
        added = set(edited.splitlines()) - set(base.splitlines())
        if added <= set(result.data.splitlines()):
            carried[path] = result.data
    return carried
