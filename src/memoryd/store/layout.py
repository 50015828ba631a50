"""The store's skeleton and its format version: `init_store` creates it, `open_store` checks it.

The format version is an integer in `.memoryd-format` at the store root (docs/store-format.md). A
store of a
newer format is refused (StoreFormatError) before anything is touched; an older one is brought up
to date by the migrations in `MIGRATIONS`, one version step at a time, each returning the paths
it changed so that they are committed together.

Invariants:
- `init_store` only creates what is missing and never rewrites a file a person may have edited;
  a second run changes nothing and makes no commit;
- the skeleton is the same bytes every time: no dates, no machine-specific content;
- folders git would not keep (empty buckets) get a short README.md saying what belongs there.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import structlog

from memoryd.errors import StoreError, StoreFormatError
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.worktree import StorePaths, UnitOfWork, atomic_write_text, sweep_temporaries

# What only `init_store` needs (the entity catalogue, the index, the tacit file's header) is
# imported there: every job checks the store through this module, an idle heartbeat included,
# and must not pay for it.

log = structlog.get_logger(__name__)

FORMAT_FILE = ".memoryd-format"
# What tells this store from any other, written once by `init_store` and shared by every clone:
# the state database is bound to it (`memoryd.jobs.reconcile`). A store from before it existed
# is told apart by the first commit of its history instead.
STORE_ID_FILE = ".memoryd/store-id"
CURRENT_FORMAT = 1
INIT_MESSAGE = "Create the memoryd store"

# What each skeleton folder holds, written to its README.md.
FOLDER_READMES: dict[str, str] = {
    "life/projects": "# Projects\n\nActive projects with a goal and an end, one folder each.\n",
    "life/areas": (
        "# Areas\n\nOngoing responsibilities without an end date (health, finances, a team), "
        "one folder each; people and companies have their own sub-buckets.\n"
    ),
    "life/areas/people": "# People\n\nOne folder per person the user deals with.\n",
    "life/areas/companies": "# Companies\n\nOne folder per company or organisation.\n",
    "life/resources": "# Resources\n\nTopics and reference material of lasting interest.\n",
    "life/archives": (
        "# Archives\n\nCompleted or inactive entities, at their path below life/ "
        "(life/archives/projects/<slug>/). Their refs still resolve.\n"
    ),
    "memory": "# Daily notes\n\nThe timeline: one file per day, memory/YYYY-MM-DD.md.\n",
}
SKILLS_README = (
    "# Agent skills\n\n"
    "One folder per agent: skills-index.md (one line per topic) and one file per topic; "
    "routines/<routine>-skills.md holds the tips of one repeating routine.\n"
)


@dataclass(frozen=True)
class StoreInfo:
    """An opened store: its root, its format version, and what opening it changed."""

    root: Path
    format_version: int
    migrated_from: int | None = None
    migration_commit: str | None = None
    swept: tuple[Path, ...] = ()


@dataclass(frozen=True)
class InitResult:
    """What `init_store` did: whether it ran `git init`, the files it created, its commit."""

    root: Path
    created_repository: bool
    created: tuple[str, ...]
    commit: str | None


def _migrate_0_to_1(root: Path) -> list[str]:
    """Format 0 is a store with life/ but no marker file: writing the marker is the upgrade."""
    atomic_write_text(StorePaths(root).resolve(FORMAT_FILE), f"{1}\n")
    return [FORMAT_FILE]


# version N -> the step that brings a format-N store to N + 1, returning the paths it changed.
MIGRATIONS: dict[int, Callable[[Path], list[str]]] = {0: _migrate_0_to_1}


def read_format(root: Path) -> int | None:
    """The store's format version: None when it is not a store at all (no marker, no life/).

    Raise StoreFormatError when the marker does not hold a non-negative integer.
    """
    marker = StorePaths(root).resolve(FORMAT_FILE)
    try:
        text = marker.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0 if (root / "life").is_dir() else None
    except (OSError, UnicodeDecodeError) as error:
        raise StoreFormatError(f"{marker}: unreadable format marker ({error})") from error
    value = text.strip()
    if not value.isascii() or not value.isdigit():
        raise StoreFormatError(f"{marker}: expected a format version number, found {value!r}")
    return int(value)


def check_format(root: Path, version: int) -> None:
    """Raise StoreFormatError for a format this memoryd cannot read or migrate."""
    if version > CURRENT_FORMAT:
        raise StoreFormatError(
            f"the store at {root} was written by a newer memoryd (format {version}); "
            f"this memoryd reads format {CURRENT_FORMAT}; upgrade memoryd"
        )
    missing = [step for step in range(version, CURRENT_FORMAT) if step not in MIGRATIONS]
    if missing:
        raise StoreFormatError(f"no migration from store format {missing[0]} to {missing[0] + 1}")


def check_store(root: Path) -> int:
    """Return the format of the memoryd store at `root`, changing nothing. Raise StoreError if
    `root` is not a memoryd store (run `memoryd init`), StoreFormatError if it is too new."""
    version = read_format(root)
    if version is None:
        raise StoreError(f"{root} is not a memoryd store yet; run `memoryd init`")
    check_format(root, version)
    return version


def open_store(root: Path, git: GitStore | None = None, *, sweep: bool = True) -> StoreInfo:
    """Check the store at `root`, migrate an older format, and sweep leftover temporary files
    (unless not `sweep`: a heartbeat removes the ones `git status` lists, see
    `memoryd.worktree._foreign`, instead of walking the whole store).

    With `git`, the migration's changes are committed (only those paths). Raise StoreError if
    `root` is not a memoryd store (run `memoryd init`), StoreFormatError if it is too new, and,
    with `git`, IgnoredStoreError before anything is touched if the repository it lies in
    ignores it (a job would otherwise do all its work only to be refused at its commit).
    """
    root = root.resolve()
    version = check_store(root)
    if git is not None:
        git.check_not_ignored()
    swept = tuple(sweep_temporaries(root)) if sweep else ()
    if swept:
        log.info("store.temporaries_swept", count=len(swept))
    if version == CURRENT_FORMAT:
        return StoreInfo(root, version, swept=swept)
    changed: set[str] = set()
    for step in range(version, CURRENT_FORMAT):
        changed.update(MIGRATIONS[step](root))
        log.info("store.migrated", from_format=step, to_format=step + 1)
    commit = None
    if git is not None:
        commit = git.commit(
            sorted(changed), f"Migrate the store from format {version} to {CURRENT_FORMAT}"
        )
    return StoreInfo(root, CURRENT_FORMAT, version, commit, swept)


def store_identity(git: GitStore) -> str | None:
    """The store's identity: its `.memoryd/store-id`, else (a store from before it) the first
    commit of its history with the store folder's path; None for a store with no commit."""
    text = UnitOfWork(git).read_text(STORE_ID_FILE)
    if text is not None and text.strip():
        return f"id:{text.strip()}"
    return git.store_identity()


def init_store(
    path: Path,
    tacit_file: str,
    skills_dir: str,
    author_name: str,
    author_email: str,
    *,
    clock: Callable[[], datetime] | None = None,
) -> InitResult:
    """Create the store skeleton at `path` (and a git repository if it is in none); commit it.

    Only missing files are written. Without `clock`, git stamps the commit with its own time.
    Raise IgnoredStoreError, creating nothing, when `path` lies inside a repository that ignores
    it; StoreFormatError for a store of a newer format; GitError when git fails.
    """
    from memoryd.store.catalog import EntityCatalog  # noqa: PLC0415 - see the imports
    from memoryd.store.index import INDEX_PATH, render_index  # noqa: PLC0415
    from memoryd.store.tacit import HEADER as TACIT_HEADER  # noqa: PLC0415

    git = GitStore(path, GitIdentity(author_name, author_email), clock)
    created_repository = git.init()
    path.mkdir(parents=True, exist_ok=True)
    root = git.store_root
    version = read_format(root)
    if version is not None:
        open_store(root, git)
    unit = UnitOfWork(git)
    wanted: dict[str, str] = {
        f"{folder}/README.md": text for folder, text in FOLDER_READMES.items()
    }
    wanted[f"{skills_dir}/README.md"] = SKILLS_README
    wanted[tacit_file] = TACIT_HEADER
    wanted[FORMAT_FILE] = f"{CURRENT_FORMAT}\n"
    if not unit.exists(STORE_ID_FILE):
        wanted[STORE_ID_FILE] = f"{uuid.uuid4().hex}\n"
    created = [relative for relative in sorted(wanted) if not unit.exists(relative)]
    for relative in created:
        unit.write_text(relative, wanted[relative])
    if not unit.exists(INDEX_PATH):
        unit.write_text(INDEX_PATH, render_index(unit, EntityCatalog.load(unit)))
        created.append(INDEX_PATH)
    # A skeleton file on disk but never committed (a first run killed before its commit) is
    # committed now, as it is; tracked ones someone edited are left to the foreign-edit commit.
    untracked = set(git.status().untracked)
    for relative in [*sorted(wanted), INDEX_PATH]:
        text = unit.read_text(relative) if relative in untracked else None
        if text is not None and relative not in created:
            unit.write_text(relative, text)
    commit = unit.apply_and_commit(INIT_MESSAGE, {})
    log.info("store.initialized", path=str(root), created=len(created), commit=commit)
    return InitResult(root, created_repository, tuple(sorted(created)), commit)
