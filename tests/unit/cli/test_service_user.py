"""Why a service user cannot reach a file: `memoryd.cli.service_user.blocking_reason` reads the
permission bits of real folders and files against a user's uid and groups."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.cli.service_user import Needed, ServiceUser, blocking_reason

# A user with no file of its own here: only the group and other bits of root's files apply.
OUTSIDER = ServiceUser("svc", uid=64999, gid=64999, groups=frozenset({64999}))


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder under the system's temporary folder, open to all (pytest's own may be 0700)."""
    path = Path(tempfile.mkdtemp(prefix="memoryd-bits-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def in_group_of(path: Path) -> ServiceUser:
    group = path.stat().st_gid
    return ServiceUser("svc", uid=64999, gid=64999, groups=frozenset({64999, group}))


def test_a_private_folder_on_the_way_is_named_with_its_mode(folder: Path) -> None:
    private = folder / "home"
    private.mkdir(mode=0o700)
    program = private / "bin" / "python3"
    program.parent.mkdir()
    program.write_text("", encoding="utf-8")
    program.chmod(0o755)
    found = blocking_reason(OUTSIDER, Needed(program, "the Python interpreter", execute=True))
    assert found is not None
    path, reason = found
    assert path == private
    assert f"{private} is mode 0700, owned by " in reason
    assert reason.endswith("so svc cannot enter it")
    assert reason.startswith(f"the Python interpreter {program}: ")


def test_group_bits_let_a_member_through_and_keep_others_out(folder: Path) -> None:
    shared = folder / "shared"
    shared.mkdir(mode=0o750)
    shared.chmod(0o750)
    script = shared / "memoryd"
    script.write_text("", encoding="utf-8")
    script.chmod(0o755)
    needed = Needed(script, "the memoryd program", execute=True)
    assert blocking_reason(in_group_of(shared), needed) is None
    found = blocking_reason(OUTSIDER, needed)
    assert found is not None and found[0] == shared


def test_a_program_needs_execute_a_library_only_read(folder: Path) -> None:
    script = folder / "memoryd"
    script.write_text("", encoding="utf-8")
    script.chmod(0o644)
    found = blocking_reason(OUTSIDER, Needed(script, "the memoryd program", execute=True))
    assert found is not None
    assert f"{script} is mode 0644, owned by " in found[1]
    assert "cannot read or run it" in found[1]
    assert blocking_reason(OUTSIDER, Needed(script, "a module", execute=False)) is None


def test_a_missing_file_is_said_and_root_passes_everything(folder: Path) -> None:
    missing = folder / "gone" / "python3"
    found = blocking_reason(OUTSIDER, Needed(missing, "the Python interpreter", execute=True))
    assert found is not None and "cannot be read (No such file or directory)" in found[1]
    private = folder / "private"
    private.mkdir(mode=0o700)
    root = ServiceUser("root", uid=0, gid=0, groups=frozenset({0}))
    assert blocking_reason(root, Needed(private, "a folder", execute=True)) is None
