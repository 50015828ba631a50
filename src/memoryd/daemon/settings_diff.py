"""What a configuration reload changed, as dotted key names (`config.reloaded`'s `changed`).

Only the names of the keys are given, never their values, so a setting that holds a secret can
change without the log showing it. Tables are compared key by key; a list whose entries are
tables with a `name` (the `[[agents]]`) entry by entry, each named by its name
(`agents["ops"].sources`), one added or removed named whole; any other list or value as one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel


def _named(value: Any) -> dict[str, Any] | None:
    """A list of tables with distinct names, keyed by name; None for any other value."""
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        return None
    names = [entry.get("name") for entry in value]
    if not all(isinstance(name, str) for name in names) or len(set(names)) != len(names):
        return None
    return {str(entry["name"]): entry for entry in value}


def _diff(old: Any, new: Any, key: str, out: list[str]) -> None:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for name in sorted({*old, *new}, key=str):
            inner = f"{key}.{name}" if key else str(name)
            if name not in old or name not in new:
                out.append(inner)
            else:
                _diff(old[name], new[name], inner, out)
        return
    old_named, new_named = _named(old), _named(new)
    if old_named is not None and new_named is not None and (old_named or new_named):
        for name in sorted({*old_named, *new_named}):
            _diff(old_named.get(name), new_named.get(name), f'{key}["{name}"]', out)
        return
    if old != new:
        out.append(key)


def changed_keys(old: BaseModel, new: BaseModel) -> list[str]:
    """The dotted names of the settings whose values differ between `old` and `new`."""
    out: list[str] = []
    _diff(old.model_dump(), new.model_dump(), "", out)
    return out
