"""Git, run as a command: the one place memoryd runs git.

`GitStore` is the way into the store's repository (status, staging, the plumbing commit, the
single writer's index lock, ignore rules); the tree functions read and write trees, blobs and
commits and move a branch safely for the sync, without git's merge machinery. Everything else in
this package is private: `_process` runs one git command, `_session` holds one operation's
repository, `_lock` decides whether a stale `index.lock` may go, `_support` has the helpers that
run no git.
"""

from __future__ import annotations

from memoryd.gitrepo._ownership import ForeignRepositoryError
from memoryd.gitrepo._repository import GitIdentity, GitStore
from memoryd.gitrepo._support import blob_name
from memoryd.gitrepo._tree import (
    MARKER_NAME,
    Entry,
    Tree,
    blocking_paths,
    commit_tree,
    is_ancestor,
    merge_base,
    move_branch,
    read_blobs,
    read_tree,
    settle_interrupted_move,
    write_blobs,
    write_work_file,
)

__all__ = [
    "MARKER_NAME",
    "Entry",
    "ForeignRepositoryError",
    "GitIdentity",
    "GitStore",
    "Tree",
    "blob_name",
    "blocking_paths",
    "commit_tree",
    "is_ancestor",
    "merge_base",
    "move_branch",
    "read_blobs",
    "read_tree",
    "settle_interrupted_move",
    "write_blobs",
    "write_work_file",
]
