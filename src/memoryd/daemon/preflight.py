"""What `run` and a one-shot `heartbeat` check before they start, and `check` reports too.

- A store folder that is not a memoryd store yet (`memoryd init` has not run): a configuration
  problem (exit 78) with the fix, never a job that fails with a traceback at every heartbeat.
- memoryd running as root over a store that belongs to another user: every file it writes would
  then be root's and the store's owner could no longer edit them. Not refused (a container may
  run everything as root), but said: a warning line and a `run.as_root` event.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import TextIO

from memoryd.logs import get_logger
from memoryd.settings import Settings
from memoryd.store.layout import read_format

log = get_logger(__name__)


def store_not_ready(settings: Settings) -> list[str]:
    """The problem when `store.path` is not a memoryd store yet; empty when it is one."""
    store = settings.store.path
    if store.is_dir() and read_format(store) is not None:
        return []
    return [
        f"At 'store.path': {store} is not a memoryd store yet; run `memoryd init` with this "
        "configuration first"
    ]


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
