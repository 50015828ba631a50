"""The trailers of memoryd's commit messages: `Key: value` lines after the message, the run's
id among them, which is how a job killed after its commit is told from one killed before it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# The commit trailer naming the run that made a commit: how a job killed after its commit is
# told apart from one killed before it.
RUN_TRAILER = "Memoryd-Run"

_TRAILER_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*\Z")


def with_trailers(message: str, trailers: Mapping[str, str]) -> str:
    """The commit message followed by `Key: value` trailer lines after a blank line."""
    lines = []
    for key, value in trailers.items():
        if not _TRAILER_KEY.match(key) or "\n" in value or "\r" in value:
            raise ValueError(f"invalid commit trailer {key!r}: {value!r}")
        lines.append(f"{key}: {value}")
    body = message.strip()
    if not body:
        raise ValueError("a commit needs a message")
    return body + ("\n\n" + "\n".join(lines) if lines else "") + "\n"
