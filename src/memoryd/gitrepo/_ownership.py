"""Whose repository memoryd is about to run git in, and which of its drivers git must not run.

Git protects a user from a repository another user owns ("dubious ownership") only while it
discovers the repository itself; memoryd names the repository explicitly (`GIT_DIR`), which
skips that check, so memoryd makes it here, without running git: the work tree, the git
directory and the store folder must belong to the user memoryd runs as. Otherwise git would run
that user's configured filters, diff and merge drivers as memoryd, which reads every transcript
and holds the API key. Refused with `ForeignRepositoryError` (exit 78), logged as
`store.foreign_owner`.

Even in memoryd's own repository, the content drivers a configuration names (a `.gitattributes`
line `filter=x`, `diff=x`, `merge=x`) are switched off for memoryd's git: `driver_overrides`
reads the section names from the configuration files git would read (without running git) and
returns settings that empty each driver's command. What is left (docs/operators-guide.md):
a driver named only in a file reached through `include.path`/`includeIf` is not seen.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import structlog

from memoryd.errors import EXIT_CONFIG, GitError

log = structlog.get_logger(__name__)

_SECTION = re.compile(r'^\s*\[\s*(filter|diff|merge)\s+"((?:[^"\\\n]|\\.){1,200})"\s*\]', re.M)
# The keys that make git run a command for a driver, and the value that disables each one:
# an empty command is no command for git's filters; `required=false` lets a missing filter pass.
_DRIVER_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("textconv", ""), ("command", "")),
    "merge": (("driver", ""),),
}


class ForeignRepositoryError(GitError):
    """The store's repository (or the store folder) belongs to another user: memoryd will not
    run git there, since git would run that user's configured commands as memoryd's user."""

    exit_code = EXIT_CONFIG

    def __init__(self, path: Path, owner: int, user: int) -> None:
        self.path = path
        self.owner = owner
        super().__init__(
            f"refusing to use the store: {path} belongs to user id {owner}, not to memoryd's "
            f"user (id {user}); git would run that user's filters and hooks as memoryd. Give "
            f"the folder to memoryd's user (chown -R), or move the store (store.path) to a "
            "folder of its own"
        )


def check_owned(paths: Iterable[Path], *, user: int | None = None) -> None:
    """Raise ForeignRepositoryError for the first existing path of `paths` another user owns.
    A path that does not exist is skipped (the store folder before `init`)."""
    uid = os.geteuid() if user is None else user
    for path in paths:
        try:
            owner = os.stat(path).st_uid
        except FileNotFoundError:
            continue
        except OSError as error:
            raise GitError(f"cannot check who owns {path}: {error}") from error
        if owner != uid:
            log.error("store.foreign_owner", path=str(path), owner=owner, user=uid)
            raise ForeignRepositoryError(path, owner, uid)


def config_files(git_dir: Path, environ: Mapping[str, str]) -> list[Path]:
    """The configuration files git reads for a repository: system, global (both places), the
    repository's own and its work tree's."""
    files = [Path(environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")]
    home = environ.get("HOME")
    xdg = environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    if environ.get("GIT_CONFIG_GLOBAL"):
        files.append(Path(environ["GIT_CONFIG_GLOBAL"]))
    else:
        if xdg:
            files.append(Path(xdg) / "git" / "config")
        if home:
            files.append(Path(home) / ".gitconfig")
    files += [git_dir / "config", git_dir / "config.worktree"]
    return files


def driver_overrides(files: Iterable[Path]) -> list[tuple[str, str]]:
    """Settings that switch off every filter, diff and merge driver `files` configure."""
    names: set[tuple[str, str]] = set()
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(1_000_000)
        except OSError:
            continue
        names.update(
            (kind, name.replace('\\"', '"').replace("\\\\", "\\"))
            for kind, name in _SECTION.findall(text)
        )
    return [
        (f"{kind}.{name}.{key}", value)
        for kind, name in sorted(names)
        for key, value in _DRIVER_KEYS[kind]
    ]
