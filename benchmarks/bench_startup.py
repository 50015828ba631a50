"""Start-up benchmark: how long `memoryd --version` and `memoryd status` take, and why.

What it measures (the start-up issue; target: both well under 0.5 s, and neither imports
`anthropic`, which only a job that calls the model needs):

1. Wall time of each command run as a real subprocess of the installed console script (the
   `memoryd` beside `--python`, or `--memoryd`), median of `--runs` runs after a warm-up run (so
   bytecode is compiled and files are in the page cache). `status` reads a small valid
   configuration: a store made by `memoryd init` and a state folder, both in a temporary folder
   outside the work tree, `llm.provider = "anthropic"`, and no API key in the environment.
2. The same commands with `-X importtime` (set as PYTHONPROFILEIMPORTTIME, so the console script
   itself is profiled): the heaviest packages by cumulative import time, whether `anthropic` is
   imported and through which chain of modules.

With `--baseline-python` (or `--baseline-memoryd`) a second memoryd, e.g. a work tree of the
commit before a refactor, is measured in the same run, interleaved run by run, and shown side
by side. Each column is labelled with the commit of the source it ran (and whether that source
had uncommitted changes). The figures go to the `## Start-up` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from benchmarks._report import write_section

TARGET_SECONDS = 0.5
RUNS = 15
WARM_UP = 1
IMPORT_PROFILES = 3  # -X importtime runs per command; the one with the median total is kept
TOP_PACKAGES = 8
NOTABLE_US = 5000  # packages cheaper than this are left out of the heaviest-packages table
COMMANDS = {"--version": ("--version",), "status": ("status",)}
WORK_TREE = Path(__file__).resolve().parent.parent
# Variables that would point memoryd at another configuration, state or key than the benchmark's.
_SCRUBBED = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "CREDENTIALS_DIRECTORY",
    "MEMORYD_CONFIG",
    "PYTHONPROFILEIMPORTTIME",
    "STATE_DIRECTORY",
)
_CONFIG = """\
[store]
path = "{root}/store"

[state]
path = "{root}/state"

[llm]
provider = "anthropic"

[[agents]]
name = "bench"
  [[agents.sources]]
  format = "jsonl"
  path = "{root}/transcripts"
"""


@dataclass(frozen=True)
class Import:
    """One line of `-X importtime`: a module imported for the first time."""

    name: str
    self_us: int
    cumulative_us: int
    parents: tuple[str, ...]  # the modules whose import led to this one, outermost first

    @property
    def package(self) -> str:
        return self.name.partition(".")[0]


def parse_importtime(stderr: str) -> list[Import]:
    """Given `-X importtime` output, return its imports, each before the ones it made."""
    rows: list[tuple[int, str, int, int]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        own, cumulative, module = line.removeprefix("import time:").split("|", 2)
        depth = (len(module) - len(module.lstrip())) // 2
        rows.append((depth, module.strip(), int(own), int(cumulative)))
    # A module is printed after everything it imported: read backwards, parents come first.
    imports: list[Import] = []
    stack: list[tuple[int, str]] = []
    for depth, name, self_us, cumulative_us in reversed(rows):
        while stack and stack[-1][0] >= depth:
            stack.pop()
        imports.append(Import(name, self_us, cumulative_us, tuple(n for _, n in stack)))
        stack.append((depth, name))
    return imports


@dataclass
class Profile:
    """What one command imported."""

    imports: list[Import]

    @property
    def total_us(self) -> int:
        return sum(item.self_us for item in self.imports)

    def package_us(self) -> dict[str, int]:
        """Cumulative time per top-level package: its imports not made by the package itself."""
        totals: dict[str, int] = {}
        for item in self.imports:
            if not any(parent.partition(".")[0] == item.package for parent in item.parents):
                totals[item.package] = totals.get(item.package, 0) + item.cumulative_us
        return totals

    def own_us(self, package: str) -> int:
        return sum(item.self_us for item in self.imports if item.package == package)

    def first(self, package: str) -> Import | None:
        """The outermost import of `package` (its root module when that was imported)."""
        found = [item for item in self.imports if item.package == package]
        return min(found, key=lambda item: (item.name != package, len(item.parents)), default=None)


@dataclass
class Target:
    """One memoryd to measure: the command that runs it and where its source comes from."""

    command: list[str]
    python: str | None
    label: str = ""
    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)  # user + system, of the child
    profiles: dict[str, Profile] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return statistics.median(self.wall[name])


def make_target(python: str | None, memoryd: str | None) -> Target:
    """The console script beside `python` (else `python -m memoryd`), or `memoryd` itself."""
    if memoryd is not None:
        memoryd = shutil.which(memoryd) or memoryd
        first = Path(memoryd).read_bytes()[:256].split(b"\n", 1)[0]
        shebang = first.removeprefix(b"#!").split()[0].decode() if first[:2] == b"#!" else None
        return Target([memoryd], python or shebang)
    interpreter = python or sys.executable
    script = Path(interpreter).parent / "memoryd"  # not resolved: a venv's python is a symlink
    command = [str(script)] if script.exists() else [interpreter, "-m", "memoryd"]
    return Target(command, interpreter)


def source_label(python: str | None) -> str:
    """Name the source `python` imports memoryd from: the commit, and uncommitted changes."""
    if python is None:
        return "unknown source"
    found = subprocess.run(
        [python, "-c", "import importlib.util as u; print(u.find_spec('memoryd').origin)"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        return f"{python} (memoryd not found)"
    package = Path(found.stdout.strip()).parent

    def git(*args: str) -> str:
        result = subprocess.run(
            ["git", "-C", str(package), *args], capture_output=True, text=True, check=False
        )
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return f"{package} (not a git work tree)"
    changed = len(git("status", "--porcelain", "--", ".").splitlines())
    tree = git("rev-parse", "--show-toplevel")
    dirty = f" + {changed} uncommitted change(s) in src/memoryd" if changed else ""
    return f"{commit}{dirty} ({tree})"


def environment(root: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED}
    env["MEMORYD_CONFIG"] = str(root / "memoryd.toml")
    return env


def prepare(target: Target, root: Path) -> None:
    """Write the configuration under `root` and run `memoryd init` with it."""
    (root / "transcripts").mkdir(parents=True)
    (root / "state").mkdir()
    (root / "memoryd.toml").write_text(_CONFIG.format(root=root), encoding="utf-8")
    result = run(target, root, ("init",))
    if result.returncode != 0:
        target.failures["init"] = _failure(result)


def run(
    target: Target, root: Path, arguments: tuple[str, ...], *, importtime: bool = False
) -> subprocess.CompletedProcess[str]:
    env = environment(root)
    if importtime:
        env["PYTHONPROFILEIMPORTTIME"] = "1"
    return subprocess.run(
        [*target.command, *arguments],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
        env=env,
    )


def _failure(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    last = lines[-1].strip() if lines else "no output"
    return f"exit {result.returncode}: {last[:160]}"


def time_once(target: Target, root: Path, name: str) -> None:
    if name in target.failures:
        return
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = run(target, root, COMMANDS[name])
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        target.failures[name] = _failure(result)
        return
    target.wall.setdefault(name, []).append(seconds)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    target.cpu.setdefault(name, []).append(cpu)


def profile(target: Target, root: Path, name: str) -> None:
    if name in target.failures:
        return
    profiles = []
    for _ in range(IMPORT_PROFILES):
        result = run(target, root, COMMANDS[name], importtime=True)
        if result.returncode != 0:
            target.failures[name] = _failure(result)
            return
        profiles.append(Profile(parse_importtime(result.stderr)))
    profiles.sort(key=lambda item: item.total_us)
    target.profiles[name] = profiles[len(profiles) // 2]


def measure(targets: list[Target], runs: int) -> None:
    """Time every command of every target, interleaved so drift affects them alike."""
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-startup-") as folder:
        roots = [Path(folder) / f"target-{number}" for number in range(len(targets))]
        assert not Path(folder).resolve().is_relative_to(WORK_TREE), "temp dir in the work tree"
        for target, root in zip(targets, roots, strict=True):
            target.label = source_label(target.python)
            prepare(target, root)
        for name, arguments in COMMANDS.items():
            for _ in range(WARM_UP):
                for target, root in zip(targets, roots, strict=True):
                    run(target, root, arguments)
            for _ in range(runs):
                for target, root in zip(targets, roots, strict=True):
                    time_once(target, root, name)
            for target, root in zip(targets, roots, strict=True):
                profile(target, root, name)


def _ms(microseconds: int) -> str:
    return f"{microseconds / 1000:,.0f} ms"


def _wall(target: Target, name: str) -> str:
    if name in target.failures:
        return f"failed ({target.failures[name]})"
    timings = target.wall[name]
    mark = "ok" if target.median(name) < TARGET_SECONDS else "**missed**"
    return (
        f"{target.median(name) * 1000:,.0f} ms {mark} "
        f"({min(timings) * 1000:,.0f}-{max(timings) * 1000:,.0f})"
    )


def _cpu(target: Target, name: str) -> str:
    if name in target.failures:
        return "n/a"
    return f"{statistics.median(target.cpu[name]) * 1000:,.0f} ms"


def _anthropic(target: Target, name: str) -> str:
    found = target.profiles.get(name)
    if found is None:
        return "n/a"
    first = found.first("anthropic")
    if first is None:
        return "no"
    return f"**yes**, {_ms(found.package_us()['anthropic'])}"


def render(targets: list[Target], options: argparse.Namespace) -> str:
    columns = ["before", "after"] if len(targets) == 2 else ["measured"]
    header = " | ".join(f"{c}: {t.label}" for c, t in zip(columns, targets, strict=True))
    rows = [f"| | {header} |", "|---|" + "---|" * len(targets)]
    for name in COMMANDS:
        cells = " | ".join(_wall(target, name) for target in targets)
        rows.append(f"| `memoryd {name}`: median wall time (min-max) | {cells} |")
    for name in COMMANDS:
        cells = " | ".join(_cpu(target, name) for target in targets)
        rows.append(f"| `memoryd {name}`: median CPU time (user + system) | {cells} |")
    for name in COMMANDS:
        cells = " | ".join(_anthropic(target, name) for target in targets)
        rows.append(f"| `anthropic` imported by `{name}` | {cells} |")
    for name in COMMANDS:
        cells = " | ".join(
            f"{_ms(p.total_us)}, {len(p.imports):,} modules" if p else "n/a"
            for p in (target.profiles.get(name) for target in targets)
        )
        rows.append(f"| all imports of `{name}` (`-X importtime`) | {cells} |")
    lines = [
        f"Run: `python -m benchmarks startup -- {' '.join(options.argv) or '(defaults)'}` on "
        f"{datetime.now(UTC):%Y-%m-%d}, Python {platform.python_version()}, {os.cpu_count()} "
        f"CPUs. Wall times: the console script as a subprocess, median of {options.runs} runs "
        f"after {WARM_UP} warm-up run (two memoryds: interleaved run by run). `status` reads a "
        "store made by `memoryd init` and a state folder in a temporary folder, "
        '`llm.provider = "anthropic"`, no API key set. Import figures: one `-X importtime` run '
        f"(the median of {IMPORT_PROFILES}), which itself slows imports. Target: both commands "
        f"under {TARGET_SECONDS} s and neither imports `anthropic`. Load average at the end: "
        f"{os.getloadavg()[0]:.1f} (on a shared machine wall times, and less so CPU times, "
        "grow with it).",
        "",
        *rows,
    ]
    for column, target in zip(columns, targets, strict=True):
        if "init" in target.failures:
            lines += ["", f"{column.capitalize()}: `memoryd init` {target.failures['init']}."]
    for name in COMMANDS:
        profiles = [target.profiles.get(name) for target in targets]
        if not any(profiles):
            continue
        totals = [p.package_us() if p else {} for p in profiles]
        heaviest: list[str] = []
        for package_us in totals:
            ranked = sorted(package_us, key=lambda package: -package_us[package])
            notable = [p for p in ranked if p != "memoryd" and package_us[p] >= NOTABLE_US]
            heaviest += notable[:TOP_PACKAGES]
        heaviest = sorted(set(heaviest), key=lambda p: -max(t.get(p, 0) for t in totals))
        lines += [
            "",
            f"Heaviest packages imported by `memoryd {name}`, by cumulative import time (a "
            "package's time includes the packages it is the first to import; — = not "
            "imported):",
            "",
            "| package | " + " | ".join(columns) + " |",
            "|---|" + "---|" * len(targets),
            *(
                f"| {package} | "
                + " | ".join(_ms(t[package]) if package in t else "—" for t in totals)
                + " |"
                for package in heaviest
            ),
            "| memoryd's own modules (self time) | "
            + " | ".join(_ms(p.own_us("memoryd")) if p else "—" for p in profiles)
            + " |",
        ]
        for column, found in zip(columns, profiles, strict=True):
            first = found.first("anthropic") if found else None
            if first is not None:
                chain = " → ".join((*first.parents, first.name))
                lines += ["", f"{column.capitalize()}, `{name}` imports anthropic via {chain}."]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks startup --")
    parser.add_argument("--runs", type=int, default=RUNS, help="timed runs per command")
    parser.add_argument("--python", help="interpreter whose memoryd to measure (default: this one)")
    parser.add_argument("--memoryd", help="memoryd executable to measure (overrides --python)")
    parser.add_argument("--baseline-python", help="also measure the memoryd of this interpreter")
    parser.add_argument("--baseline-memoryd", help="also measure this memoryd executable")
    parser.add_argument("--no-report", action="store_true", help="print only; keep BENCHMARKS.md")
    options = parser.parse_args(argv)
    options.argv = argv
    measured = make_target(options.python, options.memoryd)
    targets = [measured]
    if options.baseline_python or options.baseline_memoryd:
        targets.insert(0, make_target(options.baseline_python, options.baseline_memoryd))
    for target in targets:
        if shutil.which(target.command[0]) is None:
            print(f"not an executable: {target.command[0]}", file=sys.stderr)
            return 2
    measure(targets, options.runs)
    report = render(targets, options)
    print(report)
    if not options.no_report:
        write_section("Start-up", report)
    fast = all(
        not measured.failures and measured.median(name) < TARGET_SECONDS for name in COMMANDS
    )
    lean = all(
        name in measured.profiles and measured.profiles[name].first("anthropic") is None
        for name in COMMANDS
    )
    return 0 if fast and lean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
