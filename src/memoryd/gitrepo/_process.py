"""How memoryd runs one git command: its environment, forced settings, timeout and error text.

Used by the git adapter (`memoryd.gitrepo._repository`) and its per-operation session
(`memoryd.gitrepo._session`); no other module runs git.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from memoryd.errors import GitError
from memoryd.gitrepo._support import GitIdentity

# Settings forced on every git command memoryd runs, through GIT_CONFIG_COUNT/KEY/VALUE (git >=
# 2.31): these take precedence over every config file (system, global, the repository's own), so
# no setting there changes what memoryd relies on. Documented in docs/operators-guide.md §9.
FORCED_CONFIG: tuple[tuple[str, str], ...] = (
    # No hook runs for memoryd's commands (a daemon has no one to answer them), no signing.
    ("core.hooksPath", os.devnull),
    ("commit.gpgSign", "false"),
    ("core.quotePath", "false"),
    # The bytes memoryd writes are the bytes committed: no line-ending conversion, and no refusal
    # of a commit because a conversion would not round-trip (`core.safecrlf`).
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.eol", "lf"),
    # No command from the configuration is ever executed by memoryd's git: no file-system
    # monitor, no pager, no editor.
    ("core.fsmonitor", "false"),
    # The untracked files of a status are found from the index's cache of folders' untracked
    # entries, kept up to date by memoryd's status (`GitStore.status`): a store's folders are
    # not all read again at every heartbeat. An optional index extension other git tools skip.
    ("core.untrackedCache", "true"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    # Nothing is stashed behind memoryd's back, and submodules are left alone.
    ("rebase.autoStash", "false"),
    ("merge.autoStash", "false"),
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("advice.detachedHead", "false"),
)


def git_environment(
    identity: GitIdentity,
    stamp: str,
    git_dir: Path,
    work_tree: Path,
    extra_config: Sequence[tuple[str, str]] = (),
) -> dict[str, str]:
    """The variables every git command of one operation runs with: the repository named
    explicitly, no prompt, literal pathspecs, memoryd's identity with `stamp` as the author and
    committer date (empty: git's own clock, still masking inherited values), FORCED_CONFIG and
    `extra_config` (the drivers switched off, `memoryd.gitrepo._ownership`)."""
    forced = (*FORCED_CONFIG, *extra_config)
    environment = {
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(work_tree),
        "GIT_INDEX_FILE": str(git_dir / "index"),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
        "GIT_COMMITTER_DATE": stamp,
        "GIT_CONFIG_COUNT": str(len(forced)),
    }
    for index, (key, value) in enumerate(forced):
        environment[f"GIT_CONFIG_KEY_{index}"] = key
        environment[f"GIT_CONFIG_VALUE_{index}"] = value
    return environment


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: BinaryIO | None = None,
    timeout: float | None,
) -> tuple[int, bytes, str]:
    """Run `git <args>`: (exit status, raw standard output, standard error as text).

    Git runs with this process's environment (its `HOME` and the user's git configuration, an
    SSH agent for a remote) with `env` over it, and English messages (`LANGUAGE`, `LC_ALL`),
    which the callers' error mapping reads ("index.lock ... exists"). A command still running
    after `timeout` seconds is killed with whatever it started (an `ssh` to a remote), and
    reported with status -9 and a "Timeout" message, as GitPython's `kill_after_timeout` did;
    so is git interrupted by an exception here (a signal handler's). Git stays in memoryd's
    process group: an `ssh` it starts can still ask a person at the terminal for a passphrase.
    Git that cannot be started raises GitError."""
    environment = {**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **env}
    command = ["git", *args]
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd if os.access(cwd, os.X_OK) else None,
            env=environment,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as error:
        raise GitError(f"git {args[0]} could not be run: {error}") from error
    with process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(process)
            shown = " ".join(command)
            return -9, b"", f'Timeout: the command "{shown}" did not complete in {timeout:g} secs.'
        except BaseException:
            _kill_tree(process)
            raise
    return process.returncode, stdout, stderr.decode("utf-8", "replace")


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """Kill git and the processes it started (found before git dies, while they are still its
    descendants), and reap git."""
    for pid in [process.pid, *_descendants(process.pid)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    process.communicate()


def _descendants(root: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes below `root`, from each process's parent in `/proc/<pid>/stat`."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            # The command name, in parentheses, may hold anything: the parent follows the last
            # ')' and the state.
            fields = (proc / name / "stat").read_text(encoding="utf-8", errors="replace")
            parent = int(fields.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    waiting = [root]
    while waiting:
        for child in children.get(waiting.pop(), []):
            found.append(child)
            waiting.append(child)
    return found


def error_detail(stderr: str, status: int) -> str:
    # git's usage dumps are long; the first lines say what went wrong.
    return "; ".join(stderr.strip().splitlines()[:3]) or f"exit {status}"
