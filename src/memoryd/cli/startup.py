"""A command's start-up and exit made cheaper: the collector held off at start-up and
left out at exit, no pydantic plugins.

Starting a command imports a few hundred modules: many thousands of long-lived objects (classes,
functions, compiled patterns) and almost no garbage, yet the collector would run a hundred times
over them, a sizeable share of an idle heartbeat's cost. While `collector_paused` holds, it does
not run; when the outermost block ends, it runs as usual again. During the process's first
command, what was allocated is frozen first (`gc.freeze`): objects that live as long as the
process are left out of every later collection, as the standard library's documentation suggests
for start-up. Once that command is over (`first_command_done`), blocks only pause the collector,
so that a program calling `main` many times (the tests) does not keep freezing what it allocates.
A heartbeat hands everything frozen back to the collector at its end, start-up's objects too
(`memoryd.collector.frozen_while`): in a daemon they are then walked by the rare full passes, as
any old object is.

At exit, the interpreter runs the collector once more over everything still alive: after a
heartbeat that called the model (the SDK's several hundred pydantic classes are in memory), that
last pass cost 0.3-0.4 s of a one-shot command, more than a tenth of its time, to find garbage the
operating system is about to take back anyway. `no_collection_at_exit` freezes the heap as the
process's last exit handler, so the pass finds nothing to look at. Everything else still happens
as before: exit handlers run, files and streams are flushed and closed, and objects that are not
in a cycle are still deallocated (their finalizers run).

`without_pydantic_plugins` spares the search for pydantic plugins (see there).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

from memoryd.collector import collection_paused

_starting = True
_exit_registered = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the collector off for the block (imports, parsing the configuration)."""
    if not gc.isenabled():  # an outer block holds it off already (or the embedding program)
        yield
        return
    with collection_paused():
        try:
            yield
        finally:
            if _starting:
                gc.freeze()


def no_collection_at_exit() -> None:
    """Spare the process the collector's pass over the whole heap at exit (module docstring).
    Once per process; exit handlers registered before this call run after it."""
    global _exit_registered  # noqa: PLW0603 - one registration per process, by design
    if not _exit_registered:
        atexit.register(gc.freeze)
        _exit_registered = True


def first_command_done() -> None:
    """The process's first command is over: later blocks freeze nothing."""
    global _starting  # noqa: PLW0603 - one flag per process, by design
    _starting = False


# pydantic looks for plugins (the `pydantic` entry-point group) the first time it builds a
# model: it imports `importlib.metadata` (and with it email, zipfile, csv, tempfile, …) and reads
# the metadata of every installed distribution, about a tenth of an idle heartbeat's start-up.
# memoryd uses no pydantic plugin, and wants none: a plugin is called with every value pydantic
# validates, and memoryd validates the model's answers, which quote transcripts. So a memoryd
# process tells pydantic there are none, through the one function pydantic asks
# (`pydantic.plugin._schema_validator` imports `get_plugins` from this module when it builds a
# validator); `tests/unit/cli/test_startup.py` checks that this is still how pydantic asks.
# Should a later pydantic ask the loader for anything else, the stand-in steps aside and the
# real loader answers (and searches): start-up gets slower again, never broken.
PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"


def _no_plugins(*_args: object, **_kwargs: object) -> tuple[()]:
    return ()


def _real_loader(name: str) -> object:
    if name.startswith("__"):  # the import system's own questions (`__path__`, ...)
        raise AttributeError(name)
    if sys.modules.get(PYDANTIC_PLUGIN_LOADER) is _stand_in:
        del sys.modules[PYDANTIC_PLUGIN_LOADER]
    return getattr(importlib.import_module(PYDANTIC_PLUGIN_LOADER), name)


_stand_in = types.ModuleType(PYDANTIC_PLUGIN_LOADER, "No pydantic plugins (memoryd.cli.startup).")
_stand_in.__dict__.update(get_plugins=_no_plugins, __getattr__=_real_loader)


def without_pydantic_plugins() -> None:
    """Make this process's pydantic find no plugins, without looking for them. Call before the
    first model is built; a no-op once pydantic has looked (its loader is imported)."""
    if PYDANTIC_PLUGIN_LOADER in sys.modules:
        return
    sys.modules[PYDANTIC_PLUGIN_LOADER] = _stand_in
