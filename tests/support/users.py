"""Real other users for permission tests: created with `useradd` when the tests run as root,
commands run as them with `setpriv` (their own uid, gid and supplementary groups).

Without root, or without `useradd`/`setpriv`, the tests that need them skip, saying why.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def require_root_tools() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: it creates users and writes files as them")
    for tool in ("useradd", "usermod", "setpriv"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")


def ensure_user(name: str, *, groups: tuple[str, ...] = ()) -> pwd.struct_passwd:
    """The system user `name`, created if missing (no home, no login), member of `groups`."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )
    for group in groups:
        subprocess.run(["usermod", "-aG", group, name], check=True, capture_output=True)
    return pwd.getpwnam(name)


def as_user(
    user: str, *command: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `command` as `user` with the user's groups, this interpreter's import path and a
    small environment."""
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    environ.update(env or {})
    return subprocess.run(
        ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *command],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def memoryd_as(user: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`memoryd --log-format json ARGS` run as `user`."""
    return as_user(user, sys.executable, "-m", "memoryd", "--log-format", "json", *args, cwd=cwd)


def write_as(user: str, path: Path, text: str, *, mode: int) -> None:
    """Append `text` to `path` as `user`, creating it with `mode` as a program of theirs does
    (Claude Code creates its session files 0600 whatever the umask)."""
    script = (
        "import os, sys\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, int(sys.argv[2], 8))\n"
        "os.write(fd, sys.argv[3].encode())\n"
        "os.close(fd)\n"
    )
    done = as_user(
        user, sys.executable, "-c", script, str(path), f"{mode:o}", text, cwd=path.parent
    )
    assert done.returncode == 0, done.stderr


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A temporary folder other users can pass through (pytest's own is root-only)."""
    folder = Path(tempfile.mkdtemp(prefix="memoryd-users-"))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
