"""The collector held off while a command starts (`memoryd.cli.startup`).

Each test runs in a fresh interpreter: freezing is per process, and freezing the test runner's
own objects would change how the rest of the suite collects garbage.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.split()


def test_the_collector_is_paused_in_the_block_and_start_up_is_frozen() -> None:
    out = run_python(
        """
        import gc
        from memoryd.cli.startup import collector_paused
        with collector_paused():
            inside = gc.isenabled()
            with collector_paused():
                nested = gc.isenabled()
            after_nested = gc.isenabled()
        print(inside, nested, after_nested, gc.isenabled(), gc.get_freeze_count() > 0)
        """
    )
    assert out == ["False", "False", "False", "True", "True"]


def test_after_the_first_command_blocks_freeze_nothing() -> None:
    out = run_python(
        """
        import gc
        from memoryd.cli import main
        from memoryd.cli.startup import collector_paused
        try:
            main(["--version"])
        except SystemExit:
            pass
        frozen = gc.get_freeze_count()
        with collector_paused():
            paused = not gc.isenabled()
        print(frozen > 0, paused, gc.get_freeze_count() == frozen, gc.isenabled())
        """
    )
    assert out[-4:] == ["True", "True", "True", "True"]


def test_the_collector_runs_again_when_the_block_fails() -> None:
    out = run_python(
        """
        import gc
        from memoryd.cli.startup import collector_paused
        try:
            with collector_paused():
                raise ValueError
        except ValueError:
            pass
        print(gc.isenabled())
        """
    )
    assert out == ["True"]


def test_an_embedding_program_that_paused_the_collector_keeps_it_paused() -> None:
    out = run_python(
        """
        import gc
        from memoryd.cli.startup import collector_paused
        gc.disable()
        with collector_paused():
            pass
        print(gc.isenabled(), gc.get_freeze_count())
        """
    )
    assert out == ["False", "0"]
