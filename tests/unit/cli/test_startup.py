"""A command's start-up (`memoryd.cli.startup`): the collector held off, no pydantic plugins.

Each test runs in a fresh interpreter: freezing is per process, and freezing the test runner's
own objects would change how the rest of the suite collects garbage.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

from memoryd.cli.startup import PYDANTIC_PLUGIN_LOADER


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


def test_without_pydantic_plugins_models_are_built_without_searching_for_plugins() -> None:
    out = run_python(
        """
        import sys
        from memoryd.cli.startup import without_pydantic_plugins
        without_pydantic_plugins()
        from pydantic import BaseModel
        from pydantic.plugin._schema_validator import create_schema_validator
        from pydantic_core import SchemaValidator, core_schema

        class Point(BaseModel):
            x: int

        plain = create_schema_validator(core_schema.int_schema(), int, "m", "int", "TypeAdapter")
        print(Point(x="3").x, type(plain) is SchemaValidator, "importlib.metadata" in sys.modules)
        """
    )
    assert out == ["3", "True", "False"]


def test_pydantic_still_asks_for_its_plugins_where_memoryd_answers() -> None:
    # A pydantic release that asks elsewhere, or asks the loader for more, would quietly bring
    # the search back (start-up slower, not broken: see the next test): this says so first.
    spec = importlib.util.find_spec(PYDANTIC_PLUGIN_LOADER)
    assert spec is not None
    asking = importlib.util.find_spec("pydantic.plugin._schema_validator")
    assert asking is not None
    assert asking.origin is not None
    source = Path(asking.origin).read_text(encoding="utf-8")
    assert "from ._loader import get_plugins\n" in source
    assert source.count("_loader") == 1


def test_without_pydantic_plugins_leaves_a_loader_already_imported_alone() -> None:
    out = run_python(
        """
        import sys
        import pydantic.plugin._loader as real
        from memoryd.cli.startup import without_pydantic_plugins
        without_pydantic_plugins()
        print(sys.modules["pydantic.plugin._loader"] is real)
        """
    )
    assert out == ["True"]


def test_a_pydantic_asking_its_loader_for_more_gets_the_real_loader() -> None:
    # A later pydantic that imported another name from its loader must still start.
    out = run_python(
        """
        import sys
        from memoryd.cli.startup import without_pydantic_plugins
        without_pydantic_plugins()
        from pydantic.plugin._loader import get_plugins
        print(list(get_plugins()), "importlib.metadata" in sys.modules)
        from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP
        import pydantic.plugin._loader as loader
        print(PYDANTIC_ENTRY_POINT_GROUP, loader.__file__ is not None)
        """
    )
    assert out == ["[]", "False", "pydantic", "True"]


def test_the_heap_is_frozen_at_exit_after_the_other_exit_handlers() -> None:
    out = run_python(
        """
        import atexit, gc, sys
        atexit.register(lambda: print("frozen-at-the-end", gc.get_freeze_count() > 0))
        from memoryd.cli.startup import no_collection_at_exit
        no_collection_at_exit()
        no_collection_at_exit()
        atexit.register(lambda: print("frozen-before-a-later-handler", gc.get_freeze_count() > 0))
        print("frozen-while-running", gc.get_freeze_count() > 0)
        """
    )
    assert out == [
        "frozen-while-running",
        "False",
        "frozen-before-a-later-handler",
        "False",
        "frozen-at-the-end",
        "True",
    ]
