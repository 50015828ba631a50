"""The secret rules are compiled when first needed: a process that logs a few plain
events, as an idle heartbeat does, compiles almost none of them, and redacts all the same."""

from __future__ import annotations

import json
import subprocess
import sys

from memoryd.redaction._rule import LazyPattern

PROBE = """
import json
from memoryd.redaction import _plan, redact

def compiled():
    rules = _plan(()).rules
    patterns = [p for r in rules for p in (r.pattern, r.folded) if p is not None]
    return sum(p._compiled is not None for p in patterns), len(patterns)

plain = [redact(t) for t in ("heartbeat.finished", "nothing-new", "c4cb4f08cf4d49c4")]
after_plain, total = compiled()
token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
secret = redact("the token is " + token)
print(json.dumps({"plain": plain, "after_plain": after_plain, "total": total,
                  "secret": secret, "after_secret": compiled()[0]}))
"""


def test_plain_events_compile_almost_no_rule_and_secrets_are_still_redacted() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["plain"] == ["heartbeat.finished", "nothing-new", "c4cb4f08cf4d49c4"]
    assert report["total"] > 60
    assert report["after_plain"] <= 4  # only rules whose anchors the texts hold
    assert report["secret"] == "the token is [REDACTED:github]"
    assert report["after_secret"] > report["after_plain"]


def test_a_lazy_pattern_searches_as_the_compiled_one() -> None:
    lazy = LazyPattern(r"(?P<key>[a-z]+)=(?P<value>\d+)")
    assert lazy._compiled is None
    found = lazy.search("x  key=42", 1)
    assert found is not None and found.span("value") == (7, 9)
    assert dict(lazy.groupindex) == {"key": 1, "value": 2}
    assert lazy.search("key=42", 1) is not None and lazy.search("nothing here") is None
