"""The read queue: facts agents read, waiting for the next heartbeat to count them.

Readers (`search`, `context`, `mcp`, any number at once, beside the daemon) never take the
writer's lock, so they cannot bump `accessCount` themselves. Each appends one JSON line per fact
read — `{"fact": id, "agent": name, "day": "YYYY-MM-DD"}` — to `queue/reads.jsonl` in the state
directory. The heartbeat claims the queue under the lock (renames it to `reads-claimed-*.jsonl`),
applies the bumps in its commit (`memoryd.store.reads`, which also records the keys counted, so
nothing is counted twice), and deletes the claimed files only after that commit.

Why this may live outside the store (docs/store-format.md, The store is the truth, "the store is the
truth"): the queue holds only
reads that are not filed yet, like a transcript line not read yet. Losing it (a wiped state
directory) loses some access bumps, never a memory, and never counts anything twice; everything
that was counted is in the store.

Permissions: agents usually run as other users, in memoryd's group (operator's guide 2.6). The
state directory is made with the umask's permissions (`0750` under the unit's `UMask=0027`), so
the group can pass through it, and `prepare_state_directory` (at `init` and when the daemon
starts) makes the `queue/` folder group-writable and setgid (`2770`) whatever the umask, its
files group-writable (`0660`), so that a group member can queue reads before any memoryd process
has; nothing else in the state directory is writable by the group, and the state database stays
`0600`. A reader that cannot queue (not in the group, a read-only state directory, one it cannot
create) logs `reads.not_recorded`, says so in its answer
(`QueuedReads`) and answers anyway: reads that are not counted cost only some decay.

Concurrency: a reader opens the queue in append mode and holds a shared `flock` while writing;
after writing it checks that the file it wrote is still the queue (the heartbeat may have
renamed it meanwhile) and writes again to the new queue if not, so the line lands in a file the
heartbeat will read. The heartbeat renames the queue, then takes the exclusive `flock` on the
renamed file, which waits for writers already in it; the locks are held for one write.

The queue folder is group-writable, so what is in it is not trusted: every file memoryd opens
there is opened with `O_NOFOLLOW | O_NONBLOCK` and kept only when `fstat` says it is a regular
file, and each folder on the way (`queue/`, `queue/remembered/`, an agent's folder) must be a real
folder, not a symlink. A symlink, FIFO or device where the queue should be is refused
(`queue.unsafe`): a reader does not queue (`reads.not_recorded`), the heartbeat removes the entry
(only the link or the FIFO, never what it points to) and goes on. The heartbeat reads at most
`MAX_CLAIM_BYTES` of claimed reads per run; a bigger file is read that far and the rest dropped
(`reads.queue_truncated`): reads only cost decay, never a memory.

Whose reads: each reader appends to a file it owns (`writer_file_name`): `reads.jsonl` for root
and memoryd's own user (the queue folder's owner), `reads.u<uid>.jsonl` for any other user, and
never to a file of that name another user made. The heartbeat claims them all; the owner of a
claimed file (its `fstat`) is the writer, so a read claimed for an agent with a configured
`user` counts only from a file that user or root owns (`reads.owner_refused`). Agents without
`user`, and the default readers `cli` and `mcp`, take reads from any writer of the group.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Final

from memoryd.logs import get_logger

log = get_logger(__name__)

QUEUE_DIR: Final = "queue"
QUEUE_NAME: Final = "reads.jsonl"
CLAIMED_PREFIX: Final = "reads-claimed-"
MAX_CLAIM_BYTES: Final = 8 * 1024 * 1024

Read = tuple[str, str, date]  # (fact id, agent, day)


@dataclass(frozen=True)
class QueuedReads:
    """Whether the facts a reader returned were queued to be counted (module docstring)."""

    facts: int
    queued: bool
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"error": self.error, "facts": self.facts, "queued": self.queued}


def prepare_state_directory(state_dir: Path) -> Path:
    """Make the state directory (the umask's permissions) and its group-writable queue folder
    when missing (module docstring); return the queue folder."""
    state_dir.mkdir(parents=True, exist_ok=True)
    return queue_folder(state_dir)


def queue_folder(state_dir: Path) -> Path:
    """The group-writable queue folder of the state directory (module docstring), made when
    missing (and the state directory, with the umask's permissions, when it can be)."""
    folder = state_dir / QUEUE_DIR
    if not os.path.lexists(folder):
        state_dir.mkdir(parents=True, exist_ok=True)
        folder.mkdir(exist_ok=True)
        os.chmod(folder, 0o2770)  # noqa: S103 - the agents' group queues reads here on purpose
    return real_folder(folder)


class UnsafeQueueError(OSError):
    """A symlink, FIFO, device or other non-regular entry where a queue file or folder is."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(errno.EINVAL, f"{what}, not memoryd's own queue", str(path))


def real_folder(folder: Path) -> Path:
    """`folder`, when it is a real folder (not a symlink to one). Raise UnsafeQueueError."""
    mode = os.lstat(folder).st_mode
    if not stat.S_ISDIR(mode):
        raise UnsafeQueueError(folder, _kind(mode))
    return folder


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file" if not stat.S_ISDIR(mode) else "a folder"


def open_queue_file(path: Path, flags: int, mode: int = 0o660) -> int:
    """A descriptor on `path` opened with `flags` plus O_NOFOLLOW and O_NONBLOCK, only when it
    is a regular file (module docstring). Raise OSError (UnsafeQueueError for a special file)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno in {errno.ELOOP, errno.ENXIO}:  # a symlink; a FIFO with no reader
            raise UnsafeQueueError(path, _kind(os.lstat(path).st_mode)) from None
        raise
    opened = os.fstat(fd).st_mode
    if not stat.S_ISREG(opened):
        os.close(fd)
        raise UnsafeQueueError(path, _kind(opened))
    return fd


def open_for_append(path: Path) -> int:
    """A descriptor appending to `path`, a regular file created group-writable (module
    docstring). Raise OSError (UnsafeQueueError when `path` is not a regular file)."""
    fd = open_queue_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    if os.fstat(fd).st_uid == os.geteuid():
        os.fchmod(fd, 0o660)  # the umask may have taken the group's write bit
    return fd


def open_own_for_append(path: Path) -> int:
    """`open_for_append`, refusing a file another user owns (a neighbour cannot make a
    writer's lines land in a file whose owner speaks for someone else). Raise OSError."""
    fd = open_for_append(path)
    owner = os.fstat(fd).st_uid
    if owner != os.geteuid():
        os.close(fd)
        raise OSError(errno.EPERM, f"owned by uid {owner}, not this user: remove it", str(path))
    return fd


def writer_file_name(state_dir: Path, stem: str) -> str:
    """The queue file this process writes, named so its owner is the writer: `<stem>.jsonl`
    for root and the owner of the queue folder (memoryd's own user), `<stem>.u<uid>.jsonl`
    for any other user."""
    uid = os.geteuid()
    if uid in {0, os.stat(state_dir / QUEUE_DIR).st_uid}:
        return f"{stem}.jsonl"
    return f"{stem}.u{uid}.jsonl"


def trusted_owner(owner: int, uid: int | None) -> bool:
    """Whether a queue file owned by `owner` may speak for an agent tied to `uid` (None: an
    agent with no `user`, for which any writer in the group may speak). Root is trusted."""
    return uid is None or owner in {0, uid}


def set_aside_unsafe(path: Path) -> bool:
    """Remove `path` when it is a symlink, FIFO, device or socket (the entry only, never what a
    link points to), logging `queue.unsafe`; return whether it was one. A folder is left."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return False
    log.warning("queue.unsafe", path=str(path), kind=_kind(mode), action="removed")
    path.unlink(missing_ok=True)
    return True


def record_reads(state_dir: Path, fact_ids: Iterable[str], *, agent: str, day: date) -> QueuedReads:
    """Queue each fact id as read by `agent` on `day` (once each). A queue that cannot be
    written is logged and reported, never raised."""
    ids = list(dict.fromkeys(fact_ids))
    if not ids:
        return QueuedReads(0, queued=True)
    try:
        _append_reads(state_dir, ids, agent=agent, day=day)
    except OSError as error:
        log.warning("reads.not_recorded", agent=agent, facts=len(ids), reason=str(error))
        return QueuedReads(len(ids), queued=False, error=str(error))
    return QueuedReads(len(ids), queued=True)


def _append_reads(state_dir: Path, ids: list[str], *, agent: str, day: date) -> None:
    payload = "".join(
        json.dumps({"agent": agent, "day": day.isoformat(), "fact": fact_id}, sort_keys=True) + "\n"
        for fact_id in ids
    ).encode("utf-8")
    queue = queue_folder(state_dir) / writer_file_name(state_dir, "reads")
    while True:
        fd = open_for_append(queue) if queue.name == QUEUE_NAME else open_own_for_append(queue)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if _same_file(fd, queue):
                os.write(fd, payload)
                return
        finally:
            os.close(fd)  # also releases the lock


def _same_file(fd: int, path: Path) -> bool:
    """Whether `fd` is still the file at `path` (the heartbeat renames the queue to claim it)."""
    try:
        on_disk = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (opened.st_dev, opened.st_ino) == (on_disk.st_dev, on_disk.st_ino)


@dataclass(frozen=True)
class Claimed:
    """The reads taken from the queue for one heartbeat, and the files they came from."""

    reads: tuple[Read, ...]
    files: tuple[Path, ...]


def claim_reads(state_dir: Path, uids: Mapping[str, int | None] | None = None) -> Claimed:
    """Take the queues (and any a killed heartbeat claimed before) for this heartbeat. A line
    that does not parse is logged and skipped; a read of an agent tied to an OS user (`uids`,
    `AgentSettings.uid`) from a file another user owns is dropped (`reads.owner_refused`)."""
    folder = state_dir / QUEUE_DIR
    if not os.path.lexists(folder):
        return Claimed((), ())
    try:
        real_folder(folder)
    except UnsafeQueueError as error:
        log.warning("queue.unsafe", path=str(folder), kind=error.strerror, action="skipped")
        return Claimed((), ())
    for queue in [folder / QUEUE_NAME, *sorted(folder.glob("reads.u*.jsonl"))]:
        if _regular(queue):
            queue.rename(folder / f"{CLAIMED_PREFIX}{uuid.uuid4().hex}.jsonl")  # keeps its owner
    files = tuple(
        path for path in sorted(folder.glob(f"{CLAIMED_PREFIX}*.jsonl")) if _regular(path)
    )
    reads: list[Read] = []
    budget = MAX_CLAIM_BYTES
    for path in files:
        data, owner = _read_claimed_bytes(path, budget)
        budget = max(0, budget - len(data))
        reads.extend(_trusted(path, _parse_claimed(path, data), owner, uids or {}))
    return Claimed(tuple(dict.fromkeys(reads)), files)


def _regular(path: Path) -> bool:
    """Whether `path` is a regular file; a special file there is removed, a folder skipped,
    each logged (`queue.unsafe`)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        log.warning("queue.unsafe", path=str(path), kind="a folder", action="skipped")
        return False
    return not set_aside_unsafe(path)


def _trusted(
    path: Path, reads: list[Read], owner: int, uids: Mapping[str, int | None]
) -> list[Read]:
    """The reads of `path` whose agent its owner may speak for; the rest logged and dropped."""
    kept = [read for read in reads if trusted_owner(owner, uids.get(read[1]))]
    refused = Counter(read[1] for read in reads if not trusted_owner(owner, uids.get(read[1])))
    for agent, count in sorted(refused.items()):
        log.warning("reads.owner_refused", path=str(path), agent=agent, owner=owner, reads=count)
    return kept


def _read_claimed_bytes(path: Path, budget: int) -> tuple[bytes, int]:
    """At most `budget` bytes of a claimed file, whole lines only (the rest is logged), and
    the file's owner, from the opened descriptor."""
    try:
        fd = open_queue_file(path, os.O_RDONLY)
    except OSError as error:
        log.warning("reads.file_skipped", path=str(path), reason=str(error))
        return b"", -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits for a writer still in the renamed file
        opened = os.fstat(fd)
        size, owner = opened.st_size, opened.st_uid
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(budget)
    finally:
        os.close(fd)
    if size > len(data):
        data = data[: data.rfind(b"\n") + 1]
        log.warning(
            "reads.queue_truncated", path=str(path), read=len(data), dropped=size - len(data)
        )
    return data, owner


def _parse_claimed(path: Path, data: bytes) -> list[Read]:
    reads: list[Read] = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        try:
            item = json.loads(line)
            reads.append((str(item["fact"]), str(item["agent"]), date.fromisoformat(item["day"])))
        except (ValueError, TypeError, KeyError):
            log.warning("reads.line_skipped", path=str(path), line=number)
    return reads


def release_reads(claimed: Claimed) -> None:
    """Forget the claimed files: their reads are counted in a commit."""
    for path in claimed.files:
        path.unlink(missing_ok=True)
