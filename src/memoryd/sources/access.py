"""Which files of a source this process cannot read, and what the operator should do about it.

A transcript memoryd cannot open is skipped by every heartbeat (`source.skipped`, "Permission
denied") and kept for later, so nothing is lost, but nothing of it is filed either: the agent's
memory silently stops. `memoryd check` and `memoryd status` count such files per source with
`access_report` and name the fix with `describe`. Claude Code's session files, always 0600, are
the usual case when memoryd runs as a user other than the agent's.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from memoryd.settings import Settings
from memoryd.sources.reader import SourceReader
from memoryd.wording import plural

__all__ = [
    "GUIDE_SECTION",
    "AccessReport",
    "UnreadableFile",
    "access_report",
    "describe",
    "unreadable_sources",
]

# Where the operator's guide explains both fixes.
GUIDE_SECTION = "docs/operators-guide.md#25-letting-memoryd-read-the-transcripts"


@dataclass(frozen=True)
class UnreadableFile:
    path: str
    mode: int  # permission bits, e.g. 0o600
    owner: str  # the owner's user name, or its uid when it has none
    group: str = ""  # the file's group name, or its gid when it has none
    joined: bool = True  # this process is a member of that group


@dataclass
class AccessReport:
    """The files of one source, and those among them this process may not open for reading."""

    files: int = 0
    unreadable: list[UnreadableFile] = field(default_factory=list)


def access_report(files: Iterable[str]) -> AccessReport:
    """Given the files a source names now, return how many there are and which this process
    cannot read (`os.access` with the real ids, as the process that reads them runs). A file
    gone meanwhile is not counted."""
    report = AccessReport()
    names: dict[int, str] = {}
    mine = {os.getegid(), *os.getgroups()}
    for path in files:
        try:
            status = os.stat(path)
        except OSError:
            continue
        report.files += 1
        if os.access(path, os.R_OK):
            continue
        if status.st_uid not in names:
            names[status.st_uid] = _user_name(status.st_uid)
        report.unreadable.append(
            UnreadableFile(
                path,
                stat.S_IMODE(status.st_mode),
                names[status.st_uid],
                _group_name(status.st_gid),
                status.st_gid in mine,
            )
        )
    return report


def describe(label: str, report: AccessReport, reader: str) -> str | None:
    """One line for the operator: how many files of the source `label` the user `reader` cannot
    read, their modes and owners, and the fix. None when every file is readable."""
    count = len(report.unreadable)
    if not count:
        return None
    modes = ", ".join(
        f"{mode:04o}" for mode, _ in Counter(f.mode for f in report.unreadable).most_common()
    )
    owners = [owner for owner, _ in Counter(f.owner for f in report.unreadable).most_common()]
    owner_list = ", ".join(owners)
    first = owners[0]
    # Group read helps only a member of the file's group, or a user the file's ACL names.
    outside = sorted({f.group for f in report.unreadable if not f.joined})
    join = (
        f" with {reader} in group {', '.join(outside)} (or named in the files' default ACL)"
        if outside
        else ""
    )
    return (
        f"{label}: {count} of {plural(report.files, 'file')} unreadable by {reader} "
        f"(mode {modes}, owner {owner_list}): run memoryd as {first} "
        f"(the user unit, systemd/user/memoryd.service), or have {first} enable "
        f"memoryd-share.timer (`memoryd share` every minute){join}; see {GUIDE_SECTION}"
    )


def unreadable_sources(settings: Settings) -> list[tuple[str, AccessReport, str]]:
    """For each configured source with a file this process cannot read: its label (agent,
    format and path), its `AccessReport` and the line `describe` gives for it."""
    reader = _user_name(os.geteuid())
    found = []
    for agent in settings.agents:
        for source in agent.sources:
            files = SourceReader(agent.name, source).survey().files
            report = access_report(files)
            label = f"{agent.name} {source.format}:{source.path}"
            line = describe(label, report, reader)
            if line is not None:
                found.append((label, report, line))
    return found


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
