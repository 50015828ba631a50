"""`memoryd check --service-user USER` against the kernel's own verdict.

A real virtual environment is made with the system Python (`/usr/bin/python3 -m venv`, as the
guide says), with a real `memoryd` script in its `bin/`, and reaches this checkout's memoryd and
its dependencies through a `.pth` file. Once in a folder everyone may enter, once inside a
`0700` folder owned by root (as pyenv's interpreters are under `/root`). The service user is
`nobody`, a real unprivileged user; `runuser` is the real one. Skipped, with the reason, where
that cannot run: not root, no `nobody`, no system Python of this Python's version, or this
checkout out of `nobody`'s reach.
"""

from __future__ import annotations

import io
import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import memoryd
from memoryd.cli import main
from memoryd.cli.service_user import cmd_check_service_user
from memoryd.errors import EXIT_CONFIG, EXIT_OK

pytestmark = pytest.mark.slow

SYSTEM_PYTHON = Path("/usr/bin/python3")
USER = "nobody"
SOURCE = Path(memoryd.__file__).resolve().parents[1]
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def skip_unless_possible() -> None:
    if os.geteuid() != 0:
        pytest.skip("starting a program as another user needs root")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        pytest.skip(f"no user {USER!r} on this machine")
    if shutil.which("runuser") is None:
        pytest.skip("runuser is not installed")
    if not SYSTEM_PYTHON.exists():
        pytest.skip(f"no system Python at {SYSTEM_PYTHON}")
    version = run([str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info[:2])"])
    if version.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip(f"{SYSTEM_PYTHON} is not Python {sys.version_info[:2]}, as this checkout")
    reach = run(
        [
            "runuser",
            "-u",
            USER,
            "--",
            "test",
            "-r",
            str(SOURCE / "memoryd" / "__init__.py"),
            "-a",
            "-d",
            str(SITE_PACKAGES),
        ]
    )
    if reach.returncode != 0:
        pytest.skip(f"{USER} cannot read this checkout ({SOURCE}) or its packages")


def make_venv(folder: Path) -> Path:
    """A venv of the system Python at `folder/venv`, with a `memoryd` script; return the script."""
    venv = folder / "venv"
    made = run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)])
    assert made.returncode == 0, made.stderr
    (site,) = venv.glob("lib/python3.*/site-packages")
    (site / "memoryd-checkout.pth").write_text(f"{SOURCE}\n{SITE_PACKAGES}\n", encoding="utf-8")
    script = venv / "bin" / "memoryd"
    script.write_text(
        f"#!{venv / 'bin' / 'python'}\n"
        "import sys\nfrom memoryd.cli import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder under /tmp everyone may enter (pytest's own tmp_path is root's, 0700)."""
    skip_unless_possible()
    folder = Path(tempfile.mkdtemp(prefix="memoryd-service-user-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_a_system_python_venv_passes_and_the_guides_line_runs(open_folder: Path) -> None:
    script = make_venv(open_folder)
    result = run([str(script), "--log-format", "json", "check", "--service-user", USER])
    assert result.returncode == EXIT_OK, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(f"the service user {USER} can run memoryd 0.1.0: OK")
    (event,) = [json.loads(line) for line in result.stderr.splitlines()]
    assert (event["event"], event["level"], event["problems"]) == ("check.service_user", "info", [])
    # The guide's verification line, as the service user.
    version = run(["runuser", "-u", USER, "--", str(script), "--version"])
    assert (version.returncode, version.stdout.strip()) == (0, f"memoryd {memoryd.__version__}")


def test_a_venv_under_a_private_folder_is_refused_with_the_folder_named(open_folder: Path) -> None:
    private = open_folder / "root-home"
    private.mkdir(mode=0o700)
    script = make_venv(private)
    # What the issue saw: runuser cannot start it, and says only "Permission denied".
    refused = run(["runuser", "-u", USER, "--", str(script), "--version"])
    assert refused.returncode != 0
    assert "Permission denied" in refused.stderr

    result = run([str(script), "--log-format", "json", "check", "--service-user", USER])
    assert result.returncode == EXIT_CONFIG, result.stdout + result.stderr
    problems = result.stdout.splitlines()
    assert problems[0] == (
        f"error: At 'service user {USER}': {USER} cannot start {script}: Permission denied"
    )
    assert f"{private} is mode 0700, owned by root:root, so {USER} cannot enter it" in result.stdout
    assert "/usr/bin/python3 -m venv /opt/memoryd" in result.stdout
    assert problems[-1].endswith(f"the service user {USER} cannot run memoryd")
    (event,) = [json.loads(line) for line in result.stderr.splitlines()]
    assert (event["event"], event["level"], event["user"]) == ("check.service_user", "error", USER)
    assert any(str(private) in problem for problem in event["problems"])

    private.chmod(0o755)  # the fix the message offers: open the folder
    fixed = run([str(script), "check", "--service-user", USER])
    assert fixed.returncode == EXIT_OK, fixed.stdout


def test_an_unknown_user_and_a_user_that_is_not_root_are_refused(open_folder: Path) -> None:
    script = make_venv(open_folder)
    unknown = run([str(script), "check", "--service-user", "no-such-memoryd-user"])
    assert unknown.returncode == EXIT_CONFIG
    assert "there is no user 'no-such-memoryd-user' on this machine" in unknown.stdout
    # Run as nobody, about root: only root can start a program as another user.
    as_nobody = run(["runuser", "-u", USER, "--", str(script), "check", "--service-user", "root"])
    assert as_nobody.returncode == EXIT_CONFIG, as_nobody.stdout + as_nobody.stderr
    assert "only root can start a program as root: run this check as root" in as_nobody.stdout


def test_in_process_root_can_run_this_memoryd_and_a_stranger_is_unknown() -> None:
    """The command as the parser dispatches it, in this process (so coverage sees it)."""
    if os.geteuid() != 0:
        pytest.skip("starting a program as another user needs root")
    out = io.StringIO()
    assert main(["--log-format", "json", "check", "--service-user", "root"]) == EXIT_OK
    assert cmd_check_service_user("root", out) == EXIT_OK
    assert out.getvalue().endswith(f"can run memoryd {memoryd.__version__}: OK\n")
    out = io.StringIO()
    assert cmd_check_service_user("no-such-memoryd-user", out) == EXIT_CONFIG
    assert "there is no user 'no-such-memoryd-user'" in out.getvalue()
