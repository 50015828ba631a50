"""What `run` and a one-shot `heartbeat` check before they start, and `check` reports too.

- A store folder that is not a memoryd store yet (`memoryd init` has not run): a configuration
  problem (exit 78) with the fix, never a job that fails with a traceback at every heartbeat.
- memoryd running as root over a store that belongs to another user: every file it writes would
  then be root's and the store's owner could no longer edit them. Said by a warning line and a
  `run.as_root` event; the store is refused anyway, as any other user's repository is
  (`memoryd.gitrepo`). Root over root's own store (a container) is neither.
"""

from __future__ import annotations

import os
import pwd
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from memoryd.errors import MemorydError
from memoryd.logs import get_logger
from memoryd.settings import Settings
from memoryd.store.layout import read_format

log = get_logger(__name__)


def store_not_ready(settings: Settings) -> list[str]:
    """The problem when `store.path` is not a memoryd store yet; empty when it is one. A folder
    in another user's repository is said as such: `init` would be refused there too."""
    store = settings.store.path
    if store.is_dir() and read_format(store) is not None:
        return []
    refused = _foreign_repository(settings)
    if refused is not None:
        return [f"At 'store.path': {refused}"]
    return [
        f"At 'store.path': {store} is not a memoryd store yet; run `memoryd init` with this "
        "configuration first"
    ]


def _foreign_repository(settings: Settings) -> str | None:
    """Why memoryd refuses the repository the store folder is in (another user's), if it does:
    found without running git."""
    from memoryd.gitrepo import ForeignRepositoryError  # noqa: PLC0415 - only before init
    from memoryd.jobs.parts import git_store  # noqa: PLC0415

    try:
        git_store(settings, lambda: datetime.now(UTC)).locations()
    except ForeignRepositoryError as error:
        return str(error)
    except MemorydError:
        return None  # no repository yet, or not a usable one: `init` says what it finds
    return None


def root_warning(settings: Settings, *, euid: int | None = None) -> str | None:
    """A warning when this process runs as root and the store (or the nearest folder above it
    that exists) belongs to another user; None otherwise."""
    uid = os.geteuid() if euid is None else euid
    if uid != 0:
        return None
    owner = _owner(settings.store.path)
    if owner is None or owner == 0:
        return None
    return (
        f"At 'store.path': memoryd runs as root but {settings.store.path} belongs to "
        f"{_user_name(owner)} (uid {owner}): the files it writes will belong to root; run "
        "memoryd as that user (User= in its unit)"
    )


def warn_if_root(settings: Settings, err: TextIO) -> None:
    """At the start of `run` or `heartbeat`: log `run.as_root` and print the warning line when
    `root_warning` has one."""
    warning = root_warning(settings)
    if warning is None:
        return
    log.warning("run.as_root", store=str(settings.store.path), warning=warning)
    print(f"warning: {warning}", file=err, flush=True)


def _owner(path: Path) -> int | None:
    for candidate in (path, *path.parents):
        try:
            return candidate.stat().st_uid
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return None


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"user {uid}"
