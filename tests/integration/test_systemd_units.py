"""The systemd units under systemd/: checked by systemd itself, and against memoryd's contracts.

`systemd-analyze verify` runs on a copy of each unit in a temporary folder, and the check is
"no output at all", not the exit code: systemd 252 prints `Failed to parse …, ignoring` and
still exits 0. The copies differ from the originals in one way only: the program path
(/usr/local/bin/memoryd, or %h/.local/bin/memoryd in the user unit) is replaced by the memoryd
installed in this environment, because verify rejects an ExecStart= whose program does not exist.
Nothing else needs faking: verify does not resolve User= (the `memoryd` user need not exist
here) and does not open LoadCredential= sources, so no --root= tree is needed. This works
without systemd as PID 1; the tests skip only when systemd-analyze is not installed.

`systemd-analyze security --offline=yes --threshold=20` rates the system services; the
threshold is exposure x 10, so 20 means an exposure of 2.0 or lower.

The remaining tests read the unit files as data and hold them to the contracts in docs/
(cli.md, configuration.md, operators-guide.md): exit codes 75 and 78, the credential name
memoryd looks for, a stop timeout above the LLM timeout, the command lines accepted by memoryd's
own argument parser, one sandbox shared by every system unit.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
from tests.support.systemd_units import (
    INSTALLED_PROGRAM,
    REPOSITORY,
    UNITS,
    USER_PROGRAM,
    Directive,
    assert_silent,
    memoryd_program,
    parse_unit,
    run_analyze,
    span_seconds,
)

from memoryd.cli import build_parser
from memoryd.errors import EXIT_CONFIG, EXIT_TEMPFAIL
from memoryd.settings import CREDENTIAL_NAME, LLMSettings, ScheduleSettings

SYSTEM_UNITS = (
    "memoryd.service",
    "memoryd@.service",
    "memoryd-heartbeat.service",
    "memoryd-heartbeat.timer",
    "memoryd-rewrite.service",
    "memoryd-rewrite.timer",
)
SYSTEM_SERVICES = tuple(name for name in SYSTEM_UNITS if name.endswith(".service"))
USER_UNIT = "user/memoryd.service"
QMD_DROP_IN = "memoryd.service.d/qmd.conf"
EXPOSURE_LIMIT = 2.0

# The hardening every system unit carries, identical in each (docs/store-format.md, Layout, research
# §7).
SANDBOX_KEYS = (
    "NoNewPrivileges",
    "ProtectSystem",
    "ProtectHome",
    "PrivateTmp",
    "PrivateDevices",
    "DevicePolicy",
    "PrivateMounts",
    "PrivateUsers",
    "ProtectKernelTunables",
    "ProtectKernelModules",
    "ProtectKernelLogs",
    "ProtectControlGroups",
    "ProtectClock",
    "ProtectHostname",
    "ProtectProc",
    "ProcSubset",
    "RestrictAddressFamilies",
    "RestrictNamespaces",
    "RestrictRealtime",
    "RestrictSUIDSGID",
    "RemoveIPC",
    "LockPersonality",
    "MemoryDenyWriteExecute",
    "SystemCallArchitectures",
    "SystemCallFilter",
    "SystemCallErrorNumber",
    "CapabilityBoundingSet",
    "AmbientCapabilities",
    "UMask",
    "StateDirectoryMode",
)


def values(unit: str, section: str, key: str) -> list[str]:
    return [v for s, k, v in parse_unit((UNITS / unit).read_text()) if (s, k) == (section, key)]


def value(unit: str, section: str, key: str) -> str:
    found = values(unit, section, key)
    assert len(found) == 1, f"{unit}: expected one {section}.{key}, found {found}"
    return found[0]


# -- running systemd-analyze ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def analyze() -> str:
    program = shutil.which("systemd-analyze")
    if program is None:
        pytest.skip("systemd-analyze is not installed")
    return program


def copy_units(destination: Path) -> Path:
    """Copies of every unit with the program path pointing at the installed memoryd."""
    program = memoryd_program()
    for name in (*SYSTEM_UNITS, USER_UNIT):
        text = (UNITS / name).read_text()
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace(INSTALLED_PROGRAM, program).replace(USER_PROGRAM, program))
    return destination


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    return copy_units(tmp_path / "units")


def exposure(analyze: str, unit: Path) -> float:
    result = run_analyze(
        analyze, "security", "--offline=yes", "--threshold=20", f"./{unit.name}", cwd=unit.parent
    )
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, f"no exposure level in:\n{result.stdout}{result.stderr}"
    assert result.returncode == 0, f"above the threshold:\n{result.stdout}"
    return float(match.group(1))


# -- verify --------------------------------------------------------------------------------------


def test_every_unit_of_the_layout_is_there() -> None:
    present = {str(p.relative_to(UNITS)) for p in UNITS.rglob("*") if p.is_file()}
    # The user units of `memoryd share` are checked in test_share_units.py.
    share_units = {"user/memoryd-share.service", "user/memoryd-share.timer"}
    assert present == {*SYSTEM_UNITS, USER_UNIT, QMD_DROP_IN, *share_units}


def test_the_qmd_drop_in_verifies_and_relaxes_only_what_node_needs(
    analyze: str, copies: Path
) -> None:
    target = copies / QMD_DROP_IN
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(UNITS / QMD_DROP_IN, target)
    assert_silent(run_analyze(analyze, "verify", "./memoryd.service", cwd=copies))
    settings = [
        line.split("=", 1)[0]
        for line in (UNITS / QMD_DROP_IN).read_text().splitlines()
        if "=" in line and not line.startswith("#")
    ]
    assert settings == ["MemoryDenyWriteExecute", "Environment"]
    assert "MemoryDenyWriteExecute=no" in (UNITS / QMD_DROP_IN).read_text()


@pytest.mark.parametrize("name", SYSTEM_UNITS)
def test_system_unit_verifies_without_a_word(analyze: str, copies: Path, name: str) -> None:
    # All copies sit in one folder, so a timer's Unit= and the services' dependencies resolve.
    assert_silent(run_analyze(analyze, "verify", f"./{name}", cwd=copies))


def test_template_instance_verifies_without_a_word(analyze: str, copies: Path) -> None:
    # By instance name, so %i is expanded as in `systemctl start memoryd@work`; the trailing
    # colon keeps the host's unit folders for the targets the unit is ordered against.
    result = run_analyze(
        analyze,
        "verify",
        "memoryd@work.service",
        cwd=copies,
        env={"SYSTEMD_UNIT_PATH": f"{copies}:"},
    )
    assert_silent(result)


def test_user_unit_verifies_without_a_word(analyze: str, copies: Path, tmp_path: Path) -> None:
    # A user manager needs a runtime directory; this container has no session, so make one.
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    result = run_analyze(
        analyze,
        "--user",
        "verify",
        "./memoryd.service",
        cwd=copies / "user",
        env={"XDG_RUNTIME_DIR": str(runtime)},
    )
    assert_silent(result)


def test_a_typo_is_caught_although_verify_exits_zero(analyze: str, copies: Path) -> None:
    # The reason for "fail on any output": this would pass a check of the exit code alone.
    unit = copies / "memoryd.service"
    unit.write_text(unit.read_text().replace("ProtectSystem=strict", "ProtectSystem=strictt"))
    result = run_analyze(analyze, "verify", "./memoryd.service", cwd=copies)
    assert "strictt" in result.stdout + result.stderr


def test_an_uninstalled_program_is_caught(analyze: str, tmp_path: Path) -> None:
    # Why the copies point at the installed memoryd: the original path does not exist here.
    program = PurePosixPath(INSTALLED_PROGRAM)
    if Path(program).exists():
        pytest.skip(f"{program} exists on this machine")
    shutil.copy(UNITS / "memoryd.service", tmp_path / "memoryd.service")
    result = run_analyze(analyze, "verify", "./memoryd.service", cwd=tmp_path)
    assert str(program) in result.stdout + result.stderr


# -- security ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SYSTEM_SERVICES)
def test_system_service_exposure_is_at_most_two(analyze: str, copies: Path, name: str) -> None:
    assert exposure(analyze, copies / name) <= EXPOSURE_LIMIT


def test_an_unhardened_copy_fails_the_threshold(analyze: str, copies: Path) -> None:
    # The gate can fail: the same unit without its sandbox is far above 2.0.
    unit = copies / "memoryd.service"
    kept = [
        line for line in unit.read_text().splitlines() if line.partition("=")[0] not in SANDBOX_KEYS
    ]
    unit.write_text("\n".join(kept) + "\n")
    result = run_analyze(
        analyze, "security", "--offline=yes", "--threshold=20", "./memoryd.service", cwd=copies
    )
    assert result.returncode != 0


# -- the units against memoryd's contracts ---------------------------------------------------------


def command_lines() -> Iterator[tuple[str, str]]:
    for name in (*SYSTEM_SERVICES, USER_UNIT):
        for key in ("ExecStartPre", "ExecStart"):
            for line in values(name, "Service", key):
                yield name, line


@pytest.mark.parametrize(("name", "line"), list(command_lines()))
def test_command_lines_are_ones_memoryd_accepts(name: str, line: str) -> None:
    program, *arguments = line.split()
    assert program in {INSTALLED_PROGRAM, USER_PROGRAM}, name
    build_parser().parse_args(arguments)  # exits (SystemExit) on an unknown option or command


def test_main_service_is_a_notifying_daemon_that_respects_config_errors() -> None:
    unit = "memoryd.service"
    assert value(unit, "Service", "Type") == "notify"
    assert value(unit, "Service", "ExecStartPre").split()[1:] == ["check"]
    assert value(unit, "Service", "ExecStart").split()[-1] == "run"
    assert value(unit, "Service", "Restart") == "on-failure"
    assert value(unit, "Service", "RestartPreventExitStatus") == str(EXIT_CONFIG)
    assert span_seconds(value(unit, "Service", "WatchdogSec")) >= 60
    assert value(unit, "Install", "WantedBy") == "multi-user.target"


@pytest.mark.parametrize("name", ["memoryd.service", "memoryd@.service", USER_UNIT])
def test_daemon_stop_timeout_outlasts_an_llm_request(name: str) -> None:
    llm_timeout = LLMSettings.model_fields["timeout_seconds"].default
    assert span_seconds(value(name, "Service", "TimeoutStopSec")) > llm_timeout


@pytest.mark.parametrize("name", [*SYSTEM_SERVICES, USER_UNIT])
def test_the_api_key_arrives_under_the_name_memoryd_reads(name: str) -> None:
    credential_id, _, source = value(name, "Service", "LoadCredential").partition(":")
    assert credential_id == CREDENTIAL_NAME
    assert source.endswith("/anthropic.key")
    assert not any("API_KEY" in line for line in values(name, "Service", "Environment"))


def test_every_system_service_carries_the_same_sandbox() -> None:
    def sandbox(name: str) -> list[Directive]:
        directives = parse_unit((UNITS / name).read_text())
        return [d for d in directives if d[0] == "Service" and d[1] in SANDBOX_KEYS]

    reference = sandbox("memoryd.service")
    assert {key for _, key, _ in reference} == set(SANDBOX_KEYS)
    assert ("Service", "ProtectSystem", "strict") in reference
    assert ("Service", "ProtectHome", "read-only") in reference
    for name in SYSTEM_SERVICES:
        assert sandbox(name) == reference, name
        assert value(name, "Service", "User") == "memoryd"
        assert not values(name, "Service", "DynamicUser")


def test_oneshots_share_the_daemons_lock_and_accept_a_transient_stop() -> None:
    for command in ("heartbeat", "rewrite"):
        unit = f"memoryd-{command}.service"
        assert value(unit, "Service", "Type") == "oneshot"
        assert value(unit, "Service", "ExecStart").split()[-1] == command
        assert str(EXIT_TEMPFAIL) in value(unit, "Service", "SuccessExitStatus").split()
        # The same state directory, hence the same single-writer lock file.
        assert value(unit, "Service", "StateDirectory") == "memoryd"
        assert not values(unit, "Service", "Restart")


@pytest.mark.parametrize("timer", ["memoryd-heartbeat.timer", "memoryd-rewrite.timer"])
def test_timers_catch_up_spread_out_and_start_an_existing_service(timer: str) -> None:
    assert value(timer, "Timer", "Persistent") == "true"
    assert span_seconds(value(timer, "Timer", "RandomizedDelaySec")) > 0
    # verify does not notice a timer whose Unit= names nothing, so check it here.
    assert (UNITS / value(timer, "Timer", "Unit")).is_file()
    assert value(timer, "Install", "WantedBy") == "timers.target"


def test_timers_follow_the_default_schedule() -> None:
    schedule = ScheduleSettings()
    assert schedule.heartbeat_minutes == 30
    assert value("memoryd-heartbeat.timer", "Timer", "OnCalendar") == "*-*-* *:00/30:00"
    assert (schedule.rewrite_cron, schedule.timezone) == ("0 3 * * sun", "UTC")
    assert value("memoryd-rewrite.timer", "Timer", "OnCalendar") == "Sun *-*-* 03:00:00 UTC"


def test_template_selects_its_configuration_and_state_by_instance() -> None:
    unit = "memoryd@.service"
    assert "MEMORYD_CONFIG=/etc/memoryd/%i.toml" in values(unit, "Service", "Environment")
    assert value(unit, "Service", "StateDirectory") == "memoryd/%i"


def test_default_store_lives_in_the_state_directory_the_unit_makes_writable() -> None:
    # ProtectSystem=strict leaves only the StateDirectory writable: the example's store path
    # must be inside it, or every operator would need a ReadWritePaths= drop-in.
    example = tomllib.loads((REPOSITORY / "config" / "memoryd.example.toml").read_text())
    state = Path("/var/lib") / value("memoryd.service", "Service", "StateDirectory")
    assert Path(example["store"]["path"]).is_relative_to(state)
    assert "MEMORYD_CONFIG=/etc/memoryd/memoryd.toml" in values(
        "memoryd.service", "Service", "Environment"
    )


def test_user_unit_runs_as_its_owner() -> None:
    assert not values(USER_UNIT, "Service", "User")
    assert value(USER_UNIT, "Service", "Type") == "notify"
    assert value(USER_UNIT, "Service", "RestartPreventExitStatus") == str(EXIT_CONFIG)
    assert value(USER_UNIT, "Install", "WantedBy") == "default.target"


def test_span_parser_agrees_with_systemd(analyze: str) -> None:
    spans = {
        v
        for name in (*SYSTEM_UNITS, USER_UNIT)
        for _, key, v in parse_unit((UNITS / name).read_text())
        if key.endswith("Sec")
    }
    assert spans
    for span in spans:
        result = run_analyze(analyze, "timespan", span, cwd=UNITS)
        micros = re.search(r"μs:\s*(\d+)", result.stdout)
        assert micros, result.stdout + result.stderr
        assert span_seconds(span) == int(micros.group(1)) / 1_000_000, span
