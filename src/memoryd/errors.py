"""The error hierarchy, typed by what the caller can do about each error.

Every error memoryd raises on purpose derives from `MemorydError`. The one-shot commands map the
families onto the exit codes of docs/cli.md: configuration problems exit 78, transient conditions
exit 75, anything that failed for good exits 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TEMPFAIL = 75
EXIT_CONFIG = 78


class MemorydError(Exception):
    """Root of every error memoryd raises on purpose."""

    exit_code = EXIT_FAILED


class ConfigError(MemorydError):
    """The configuration cannot be used. Carries every problem found, not just the first."""

    exit_code = EXIT_CONFIG

    def __init__(self, path: Path | str | None, problems: Sequence[str]) -> None:
        self.path = str(path) if path is not None else None
        self.problems = list(problems)
        where = f"Invalid configuration in {self.path}" if self.path else "Invalid configuration"
        super().__init__(where + ":\n" + "\n".join(f"  {p}" for p in self.problems))


class TransientError(MemorydError):
    """Worth trying again later: the work stopped early and nothing was lost."""

    exit_code = EXIT_TEMPFAIL


class LockHeldError(TransientError):
    """Another memoryd process holds the single-writer lock."""

    def __init__(self, lock_path: Path, holder_pid: int | None) -> None:
        self.lock_path = lock_path
        self.holder_pid = holder_pid
        holder = f"pid {holder_pid}" if holder_pid else "another process"
        super().__init__(f"{lock_path} is held by {holder}; another memoryd is running")


class StoreError(MemorydError):
    """The memory store cannot be read or written as asked."""


class StoreFormatError(StoreError):
    """The store was written by a newer memoryd, or its format marker is unreadable."""


class IgnoredStoreError(StoreError):
    """The store folder lies inside a larger repository whose ignore rules exclude it.

    Committing would mean forcing ignored files into that repository's history, so memoryd
    refuses. Only the operator can fix it (move the store, give it its own repository, or drop
    the rule) and a retry never will: a configuration error, exit 78.
    """

    exit_code = EXIT_CONFIG

    def __init__(self, store: Path, repository: Path, pattern: str, source: str) -> None:
        self.store = store
        self.repository = repository
        self.pattern = pattern
        self.source = source
        super().__init__(
            f"refusing to use the store at {store}: the enclosing git repository {repository} "
            f"ignores it (rule {pattern!r} at {source}), and memoryd does not force ignored "
            "files into a repository's history; move the store out of the ignored folder "
            f"(store.path), make it a repository of its own (git init {store}), or remove the rule"
        )


class CorruptFileError(StoreError):
    """A store file memoryd owns does not parse; it is left untouched."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason} (left untouched; fix or move it away)")


class PathEscapeError(StoreError):
    """A write would land outside the store or through a symlink."""

    def __init__(self, path: Path | str, root: Path) -> None:
        self.path = path
        self.root = root
        super().__init__(f"refusing to write {path}: not a plain path inside the store {root}")


class ConcurrentEditError(StoreError):
    """A file changed on disk after memoryd read it; the change must be re-planned."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path} changed since memoryd read it; it will be re-read")


class GitError(StoreError):
    """A git operation on the store failed."""


class GitBusyError(GitError):
    """Another live git process holds the repository's `index.lock`: try again later (75)."""

    exit_code = EXIT_TEMPFAIL


class GitStateError(GitError):
    """The repository is in a state only a person can resolve (a detached HEAD, a person's rebase
    or merge in progress): memoryd refuses to write there, as for a configuration error (78)."""

    exit_code = EXIT_CONFIG


class AgentConfigError(MemorydError):
    """A runtime's own configuration file (Claude Code's settings, Codex's config.toml, ...)
    cannot be read or edited safely; `memoryd connect` leaves it untouched (78)."""

    exit_code = EXIT_CONFIG

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason} (left untouched; fix it or move it away)")
