"""docs/configuration.md and the settings model cannot drift: every key of the model is
documented, every documented key exists, and each default written as a TOML value is the model's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memoryd.settings import AgentSettings, PriceSettings, Settings, SourceSettings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
_ROW = re.compile(r"^\| `([a-z_\[\].]+)` \| ([^|]*) \|")
_SECTION = re.compile(r"^## \[([a-z_]+)\]\s*$")


def documented() -> dict[str, str]:
    """Each documented key, as a full path (`llm.model`, `agents[].sources[].path`), and the
    text of its default column."""
    keys: dict[str, str] = {}
    section = ""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = _SECTION.match(line)
        if heading:
            section = heading.group(1)
        elif line.startswith("## "):
            section = ""
        row = _ROW.match(line)
        if row:
            key = row.group(1)
            keys[key if key.startswith("agents[]") else f"{section}.{key}"] = row.group(2).strip()
    return keys


def model_keys() -> dict[str, Any]:
    """Each key of the model as a full path, with its default (Ellipsis when required)."""
    keys: dict[str, Any] = {}
    for name, info in Settings.model_fields.items():
        table = info.annotation
        if isinstance(table, type) and issubclass(table, BaseModel):
            keys.update(_fields(table, f"{name}."))
    keys["agents[].sources"] = []
    keys.update(_fields(AgentSettings, "agents[]."))
    keys.update(_fields(SourceSettings, "agents[].sources[]."))
    return keys


def _fields(model: type[BaseModel], prefix: str) -> dict[str, Any]:
    found = {}
    for name, info in model.model_fields.items():
        if name == "sources" and model is AgentSettings:
            continue
        found[prefix + name] = ... if info.is_required() else info.get_default()
    return found


def test_every_model_key_is_documented_and_every_documented_key_exists() -> None:
    doc, model = set(documented()), set(model_keys())
    assert model - doc == set(), "keys of the model missing from docs/configuration.md"
    assert doc - model == set(), "keys documented in docs/configuration.md that do not exist"


def test_documented_defaults_are_the_model_defaults() -> None:
    model = model_keys()
    checked = 0
    for key, default in documented().items():
        literal = re.fullmatch(r"`([^`]*)`", default)
        if default == "required":
            assert model[key] is ..., f"{key} is documented as required but has a default"
            continue
        if literal is None:
            continue
        try:
            value = tomllib.loads(f"v = {literal.group(1)}")["v"]
        except tomllib.TOMLDecodeError:
            continue
        assert model[key] == value, f"{key}: documented default {value!r}, model {model[key]!r}"
        checked += 1
    assert checked > 30


def test_every_price_field_is_named_in_the_prices_row() -> None:
    row = next(
        line for line in DOC.read_text(encoding="utf-8").splitlines() if "| `prices`" in line
    )
    for name in PriceSettings.model_fields:
        assert re.search(rf"\b{name}\b", row), name
