"""The user units that run `memoryd share` as an agent's user: checked by systemd itself
(`systemd-analyze --user verify`, "no output at all" as in test_systemd_units.py) and against
the command line memoryd accepts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.support.systemd_units import (
    INSTALLED_PROGRAM,
    UNITS,
    assert_silent,
    memoryd_program,
    parse_unit,
    run_analyze,
    span_seconds,
)

from memoryd.cli import build_parser

SHARE_UNITS = ("user/memoryd-share.service", "user/memoryd-share.timer")


def directives(name: str, section: str, key: str) -> list[str]:
    return [v for s, k, v in parse_unit((UNITS / name).read_text()) if (s, k) == (section, key)]


@pytest.fixture
def user_units(tmp_path: Path) -> Path:
    """Copies of the user units, the program path pointing at the installed memoryd."""
    folder = tmp_path / "user"
    folder.mkdir()
    for name in SHARE_UNITS:
        text = (UNITS / name).read_text().replace(INSTALLED_PROGRAM, memoryd_program())
        (folder / Path(name).name).write_text(
            text.replace("%h/.local/bin/memoryd", memoryd_program())
        )
    return folder


@pytest.fixture
def analyze() -> str:
    program = shutil.which("systemd-analyze")
    if program is None:
        pytest.skip("systemd-analyze is not installed")
    return program


@pytest.mark.parametrize("name", ["memoryd-share.timer", "memoryd-share.service"])
def test_user_unit_verifies_without_a_word(
    analyze: str, user_units: Path, tmp_path: Path, name: str
) -> None:
    # A user manager needs a runtime directory; this container has no session, so make one.
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    result = run_analyze(
        analyze,
        "--user",
        "verify",
        f"./{name}",
        cwd=user_units,
        env={"XDG_RUNTIME_DIR": str(runtime)},
    )
    assert_silent(result)


def test_a_broken_copy_is_caught(analyze: str, user_units: Path, tmp_path: Path) -> None:
    timer = user_units / "memoryd-share.timer"
    timer.write_text(timer.read_text().replace("OnUnitActiveSec=1min", "OnUnitActiveSec=1minn"))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    result = run_analyze(
        analyze,
        "--user",
        "verify",
        "./memoryd-share.timer",
        cwd=user_units,
        env={"XDG_RUNTIME_DIR": str(runtime)},
    )
    assert (result.stdout + result.stderr).strip()


def test_the_service_runs_share_with_the_system_configuration() -> None:
    service = SHARE_UNITS[0]
    (line,) = directives(service, "Service", "ExecStart")
    program, *arguments = line.split()
    assert program == INSTALLED_PROGRAM
    assert build_parser().parse_args(arguments).command == "share"
    assert directives(service, "Service", "Type") == ["oneshot"]
    assert "MEMORYD_CONFIG=/etc/memoryd/memoryd.toml" in directives(
        service, "Service", "Environment"
    )
    assert not directives(service, "Service", "User")  # the agent's own user


def test_the_timer_runs_every_minute_from_the_start() -> None:
    timer = SHARE_UNITS[1]
    assert [span_seconds(v) for v in directives(timer, "Timer", "OnUnitActiveSec")] == [60]
    assert directives(timer, "Timer", "OnStartupSec")
    assert directives(timer, "Install", "WantedBy") == ["timers.target"]
