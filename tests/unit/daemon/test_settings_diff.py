"""The keys a reload changed: dotted names, agents by name, never a value."""

from __future__ import annotations

from pydantic import BaseModel, SecretStr

from memoryd.daemon.settings_diff import changed_keys


class Agent(BaseModel):
    name: str
    sources: list[str] = []


class LLM(BaseModel):
    model: str = "m1"
    token: SecretStr = SecretStr("old-secret-value")


class Config(BaseModel):
    llm: LLM = LLM()
    agents: list[Agent] = []
    tags: list[str] = []


def test_nothing_changed_is_an_empty_list() -> None:
    config = Config(agents=[Agent(name="ops")])
    assert changed_keys(config, Config(agents=[Agent(name="ops")])) == []


def test_changes_are_named_by_dotted_keys_and_agents_by_name() -> None:
    old = Config(agents=[Agent(name="ops"), Agent(name="gone")], tags=["a"])
    new = Config(
        llm=LLM(model="m2", token=SecretStr("new-secret-value")),
        agents=[Agent(name="ops", sources=["/logs"]), Agent(name="added")],
        tags=["a", "b"],
    )
    changed = changed_keys(old, new)
    assert changed == [
        'agents["added"]',
        'agents["gone"]',
        'agents["ops"].sources',
        "llm.model",
        "llm.token",
        "tags",
    ]
    assert not any("secret" in key for key in changed)
