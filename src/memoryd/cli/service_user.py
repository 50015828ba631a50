"""`memoryd check --service-user USER` (docs/cli.md): can USER run this memoryd?

Run as root before the service is started (docs/operators-guide.md, 2.2): a virtual environment
made by an interpreter under a private folder (pyenv or asdf under a `0700` `/root`) installs a
`memoryd` the service user cannot start, and systemd or `runuser` then only say "Permission
denied". This check says which folder or file stops the user, and why.

Two parts. The proof: this memoryd's own program is started as USER (`--version`, with USER's
uid, group and supplementary groups; root can do that without `runuser` or `sudo`), so the
verdict is the kernel's, ACLs included. The explanation: each file the program needs (the
program, the interpreter it names and the one that really runs, the standard library, memoryd's
package) and every folder above them is read against USER's uid and groups by its permission
bits, and the first one that stops USER is named with its mode and owner. The configuration is
not read: this runs before there is one. Exit 0 when USER can run memoryd, 78 otherwise.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import memoryd
from memoryd.errors import EXIT_CONFIG, EXIT_OK
from memoryd.logs import get_logger

log = get_logger("memoryd.cli")

GUIDE = "docs/operators-guide.md#22-the-program"
RUN_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class ServiceUser:
    """Whom the kernel sees when the service runs: the user, its group and every group it is in."""

    name: str
    uid: int
    gid: int
    groups: frozenset[int]

    @classmethod
    def named(cls, name: str) -> ServiceUser:
        """The user called `name`. Raise KeyError when there is none."""
        entry = pwd.getpwnam(name)
        groups = frozenset(os.getgrouplist(name, entry.pw_gid))
        return cls(name, entry.pw_uid, entry.pw_gid, groups)


@dataclass(frozen=True)
class Needed:
    """A file or folder the program needs, and what for."""

    path: Path
    what: str
    execute: bool  # a program run by the kernel (or a folder), not only a file read


def cmd_check_service_user(name: str, out: TextIO) -> int:
    """Check that the user `name` can run this memoryd; print the verdict and each problem with
    its fix; return 0 or 78."""
    problems = service_user_problems(name, program_command(), needed_files())
    for problem in problems:
        print(f"error: At 'service user {name}': {problem}", file=out)
    if problems:
        print(f"{sys.executable}: the service user {name} cannot run memoryd", file=out)
        log.error("check.service_user", user=name, interpreter=sys.executable, problems=problems)
        return EXIT_CONFIG
    print(
        f"{sys.executable} (Python {sys.version.split()[0]}): the service user {name} "
        f"can run memoryd {memoryd.__version__}: OK",
        file=out,
    )
    log.info("check.service_user", user=name, interpreter=sys.executable, problems=[])
    return EXIT_OK


def service_user_problems(name: str, command: list[str], needed: list[Needed]) -> list[str]:
    """Why the user `name` cannot run `command` (which starts this program), in words: what
    the kernel said, then each folder or file that stops the user (of `needed`, the files the
    command needs), then the fix. Empty when the command ran as that user."""
    try:
        user = ServiceUser.named(name)
    except KeyError:
        return [f"there is no user {name!r} on this machine; create it first (guide, 2.1)"]
    if os.geteuid() not in (0, user.uid):
        return [f"only root can start a program as {name}: run this check as root"]
    failure = run_as(user, command)
    if failure is None:
        return []  # the kernel let the user run it (an ACL may grant what the bits deny)
    blocked: dict[Path, str] = {}
    for item in needed:
        found = blocking_reason(user, item)
        if found is not None:
            blocked.setdefault(found[0], found[1])
    advice = (
        f"fix: make the virtual environment with a system Python that {name} can run, in a "
        f"folder {name} can enter (/usr/bin/python3 -m venv /opt/memoryd), or open the folders "
        f"named above to {name}; see {GUIDE}"
    )
    return [failure, *blocked.values(), advice]


def program_command() -> list[str]:
    """The command that starts this memoryd the way it was started now: the `memoryd` script,
    or the interpreter with `-m memoryd`."""
    script = Path(sys.argv[0]).absolute()
    if script.name == "__main__.py" or not script.is_file():
        return [sys.executable, "-m", "memoryd", "--version"]
    return [str(script), "--version"]


def needed_files() -> list[Needed]:
    """The files and folders this memoryd needs to start, as given and as resolved."""
    needed: list[Needed] = []
    command = program_command()
    if command[0] != sys.executable:
        needed.append(Needed(Path(command[0]), "the memoryd program", execute=True))
    needed.append(Needed(Path(sys.executable), "the Python interpreter", execute=True))
    needed.append(Needed(Path(os.__file__).parent, "Python's standard library", execute=True))
    needed.append(Needed(Path(memoryd.__file__).parent, "memoryd's package", execute=True))
    both: list[Needed] = []
    for item in needed:
        resolved = Needed(Path(os.path.realpath(item.path)), item.what, item.execute)
        both.extend(entry for entry in (item, resolved) if entry not in both)
    return both


def blocking_reason(user: ServiceUser, item: Needed) -> tuple[Path, str] | None:
    """The first folder above `item.path`, or the path itself, whose permission bits keep
    `user` out, and why in words; None when the bits let it through."""
    chain = [*reversed(item.path.parents), item.path]
    for position, path in enumerate(chain):
        last = position == len(chain) - 1
        try:
            info = path.lstat() if not last else path.stat()
        except OSError as error:
            return path, f"{item.what} {item.path}: {path} cannot be read ({error.strerror})"
        if stat.S_ISLNK(info.st_mode):
            continue  # a link's own bits are not checked; its target is listed on its own
        wanted = _wanted_bits(last=last, folder=stat.S_ISDIR(info.st_mode), execute=item.execute)
        if _granted(user, info) & wanted != wanted:
            return path, (
                f"{item.what} {item.path}: {path} is mode {stat.S_IMODE(info.st_mode):04o}, "
                f"owned by {_owner(info)}, so {user.name} cannot "
                f"{_verb(last=last, folder=stat.S_ISDIR(info.st_mode))} it"
            )
    return None


def run_as(user: ServiceUser, command: list[str]) -> str | None:
    """Start `command` as `user` (from `/`, with a bare environment); None when it exits 0, else
    what went wrong, in the kernel's or the program's words."""
    try:
        result = subprocess.run(
            command,
            user=user.uid,
            group=user.gid,
            extra_groups=sorted(user.groups),
            cwd="/",
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_SECONDS,
            check=False,
        )
    except OSError as error:
        return f"{user.name} cannot start {command[0]}: {error.strerror}"
    except subprocess.TimeoutExpired:
        return f"{' '.join(command)} run as {user.name} did not end in {RUN_TIMEOUT_SECONDS} s"
    if result.returncode == 0:
        return None
    last_line = (result.stderr.strip().splitlines() or ["no message"])[-1]
    return f"{' '.join(command)} run as {user.name} exited {result.returncode}: {last_line}"


def _wanted_bits(*, last: bool, folder: bool, execute: bool) -> int:
    """A folder on the way needs search (x); a folder needed itself, read and search; a file,
    read, and execute when the kernel runs it."""
    if not last:
        return 0o1
    if folder:
        return 0o5
    return 0o5 if execute else 0o4


def _granted(user: ServiceUser, info: os.stat_result) -> int:
    """The rwx bits (as 0o7) that `user` gets on a file, by owner, group or other."""
    mode = stat.S_IMODE(info.st_mode)
    if user.uid == 0:
        return 0o7
    if info.st_uid == user.uid:
        return (mode >> 6) & 0o7
    if info.st_gid in user.groups:
        return (mode >> 3) & 0o7
    return mode & 0o7


def _verb(*, last: bool, folder: bool) -> str:
    if not last or folder:
        return "enter"
    return "read or run"


def _owner(info: os.stat_result) -> str:
    try:
        owner = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        owner = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return f"{owner}:{group}"
