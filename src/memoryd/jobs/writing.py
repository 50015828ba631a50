"""What a writing command (`forget`, `supersede`, `review accept|reject`) needs beyond its session.

Such a command changes the store as a heartbeat does, inside one writing session
(`memoryd.jobs.session`). A new fact it files gets an id in this host's range (`host_code`), like
a heartbeat's, so that a correction made on one host never gives an id another host gave.
"""

from __future__ import annotations

from memoryd.jobs.environment import Environment, host_name
from memoryd.settings import Settings
from memoryd.store.items import host_id_code


def host_code(settings: Settings, env: Environment) -> int | None:
    """This host's fact-id code in a store shared by several hosts, else None."""
    return host_id_code(host_name(settings, env)) if settings.git.push else None
