"""Configuration problems said as an operator reads them (docs/configuration.md).

pydantic's errors name a constraint in its own terms ("String should match pattern ...") and an
agent by its position; here each becomes a sentence at a key path that names the agent, with a
"did you mean" for a misspelt key. The cross-field rules are checked over the raw document, so they
are reported together with the field problems rather than after them are fixed.
"""

import re
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

NAME_RULE = "must be 1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_ESCAPE_HINT = (
    "; in double quotes a backslash starts an escape: write a Windows path in single quotes "
    "('C:\\path') or with forward slashes"
)

# pydantic error type -> a sentence; {name} placeholders come from the error's context.
_SENTENCES = {
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than": "must be less than {lt}",
    "less_than_equal": "must be at most {le}",
    "string_too_short": "must not be empty",
    "string_too_long": "must be at most {max_length} characters",
    "int_type": "must be a whole number, written without quotes",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number, written without quotes",
    "bool_type": "must be true or false, written without quotes",
    "string_type": "must be a string, written in quotes",
    "list_type": "must be a list, written [ ... ]",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "literal_error": "must be one of {expected}",
}


def read_toml(text: str) -> dict[str, Any]:
    """Parse the file's text, a leading byte order mark (Notepad's) allowed.

    Raise ValueError with the parser's message, plus a hint when it is about a backslash.
    """
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        if "hex value" in message or "escape" in message.lower() or "Unescaped '\\'" in message:
            message += _ESCAPE_HINT
        raise ValueError(message) from None


def describe(item: Mapping[str, Any], raw: Mapping[str, Any], model: type[BaseModel]) -> str:
    """One pydantic error as `At 'key': sentence`."""
    loc = tuple(item["loc"])
    key = key_path(loc, raw)
    kind = item["type"]
    if kind == "extra_forbidden":
        return f"At '{key}': unknown key" + _suggestion(model, loc)
    if kind == "missing":
        return f"At '{key}': required key is missing"
    if kind == "string_pattern_mismatch" and loc and loc[-1] in {"name", "routine"}:
        return f"At '{key}': {NAME_RULE}"
    if kind in _SENTENCES:
        context = dict(item.get("ctx") or {})
        try:
            return f"At '{key}': " + _SENTENCES[kind].format(**context)
        except (KeyError, IndexError):
            pass
    message = str(item["msg"]).removeprefix("Value error, ")
    return f"At '{key}': {message}"


def key_path(loc: Sequence[int | str], raw: Mapping[str, Any]) -> str:
    """The key path of `loc`, an agent with a valid name named by it: agents["ops-bot"]."""
    text = ""
    for index, part in enumerate(loc):
        if isinstance(part, int):
            name = agent_name(raw, part) if index == 1 and loc[0] == "agents" else None
            text += f'["{name}"]' if name else f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def agent_name(raw: Mapping[str, Any], position: int) -> str | None:
    """The valid, unique name of the agent at `position` in the raw document, else None."""
    agents = raw.get("agents")
    if not isinstance(agents, list) or not 0 <= position < len(agents):
        return None
    entry = agents[position]
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str) or not _NAME.match(name):
        return None
    same = [a for a in agents if isinstance(a, dict) and a.get("name") == name]
    return name if len(same) == 1 else None


def cross_field_problems(raw: Mapping[str, Any]) -> list[str]:
    """The rules joining fields, over the raw values (each skipped when its values are invalid)."""
    problems = []
    decay = raw.get("decay", {})
    if isinstance(decay, dict):
        hot, warm = decay.get("hot_days", 7), decay.get("warm_days", 30)
        if _whole(hot) and _whole(warm) and warm <= hot:
            problems.append("At 'decay.warm_days': must be greater than decay.hot_days")
    agents = raw.get("agents", [])
    seen: set[str] = set()
    for position, agent in enumerate(agents if isinstance(agents, list) else []):
        name = agent.get("name") if isinstance(agent, dict) else None
        if isinstance(name, str) and name in seen:
            problems.append(f"At 'agents[{position}].name': agent {name!r} is defined twice")
        if isinstance(name, str):
            seen.add(name)
    return problems


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def field_names(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys allowed in the table at `loc` (a path of the model), [] when not a model's."""
    annotation: Any = model
    for part in loc:
        annotation = _table(annotation, part)
        if annotation is None:
            return []
    target = _model_in(annotation)
    return list(target.model_fields) if target is not None else []


def _table(annotation: Any, part: int | str) -> Any:
    target = _model_in(annotation)
    if target is not None and isinstance(part, str):
        field = target.model_fields.get(part)
        return field.annotation if field is not None else None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is list and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in {typing.Union, types.UnionType}:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _suggestion(model: type[BaseModel], loc: Sequence[int | str]) -> str:
    if not loc or not isinstance(loc[-1], str):
        return ""
    import difflib  # noqa: PLC0415 - only a misspelt key needs it; start-up does not

    close = difflib.get_close_matches(loc[-1], field_names(model, loc[:-1]), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
