"""The cyclic garbage collector held off while a command starts (issue 15).

Starting a command imports a few hundred modules: many thousands of long-lived objects (classes,
functions, compiled patterns) and almost no garbage, yet the collector would run a hundred times
over them, a sizeable share of an idle heartbeat's cost. While `collector_paused` holds, it does
not run; when the outermost block ends, it runs as usual again. During the process's first
command, what was allocated is frozen first (`gc.freeze`): objects that live as long as the
process are left out of every later collection, as the standard library's documentation suggests
for start-up. Once that command is over (`first_command_done`), blocks only pause the collector,
so that a program calling `main` many times (the tests) does not keep freezing what it allocates.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_starting = True


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold the collector off for the block (imports, parsing the configuration)."""
    if not gc.isenabled():  # an outer block holds it off already (or the embedding program)
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if _starting:
            gc.freeze()
        gc.enable()


def first_command_done() -> None:
    """The process's first command is over: later blocks freeze nothing."""
    global _starting  # noqa: PLW0603 - one flag per process, by design
    _starting = False
