"""The classes of skill tips and tacit lines the safety gate holds for review.

`DANGER_RULES` pairs each reason with the pattern that finds it in a tip's words: tips that run
remote code or weaken security posture. The heartbeat's gate (`memoryd.extractors.gate`) holds a
tip that matches; the weekly consolidation (`memoryd.rewrite.consolidate`) refuses an answer that
introduces such a tip where none of the tips it merges had it. They live in the store package
because both jobs use them and neither may import the other. docs/operators-guide.md section 10
lists what each catches and what none of them can.
"""

from __future__ import annotations

import re
from typing import Final

_I = re.IGNORECASE
_SHELLS = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:ba|z|da|k|fi|c|tc)?sh\b"
    r"|python[0-9.]*\b|perl\b|ruby\b|node\b|iex\b"
)
_CREDENTIALS = (
    r"(?:id_(?:rsa|dsa|ecdsa|ed25519)\b|\.ssh/|private[ _-]?keys?\b|\.aws/credentials|credentials?"
    r"|passwords?\b|passwd\b|/etc/shadow|tokens?\b|api[ _-]?keys?\b|secrets?\b|\.env\b|\.netrc\b"
    r"|kubeconfig|\.kube/config|keychain|cookies?\b|ssh keys?\b|seed phrase|wallet)"
)
_SEND = (
    r"(?:e-?mail|mail|send|sending|upload|uploading|post|posting|paste|share|forward|exfiltrate"
    r"|transfer|submit|scp|rsync|nc|netcat|curl|wget)"
)
# A destination: an address, a URL, a host, or "to <something>".
_DESTINATION = r"(?:\S+@\S+\.\w+|https?://|ftp://|pastebin|gist\b|webhook|\bto\s+\S+)"

# (reason, pattern): each class the gate holds, in the words a tip would use.
DANGER_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "pipe-to-shell",
        re.compile(
            r"(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch)\b[^|\n]{0,300}\|\s*"
            + _SHELLS
            + r"|(?:ba|z)?sh\s+(?:-c\s+)?[\"']?\s*<?\(\s*(?:curl|wget)"
            r"|\$\(\s*(?:curl|wget)\b"
            r"|\bpip(?:e|ed|ing)?\b[^\n]{0,120}?\b(?:to|into)\s+(?:a\s+)?(?:sudo\s+)?"
            r"(?:ba|z)?(?:sh|shell)\b"
            r"|\biex\s*\(\s*(?:new-object|iwr|irm|invoke-)",
            _I,
        ),
    ),
    (
        "tls-verification-disabled",
        re.compile(
            r"\bcurl\b[^\n]{0,200}\s(?:-k|--insecure)\b|--no-check-certificate|verify\s*=\s*false"
            r"|node_tls_reject_unauthorized\s*=\s*['\"]?0|git_ssl_no_verify"
            r"|ssl_?verify\s*[= ]\s*false"
            r"|pythonhttpsverify\s*=\s*0|--trusted-host|strict-ssl\s*[= ]?\s*false"
            r"|insecureskipverify\s*[:=]\s*true|rejectunauthorized\s*[:=]\s*false"
            r"|ssl_verifypeer\s*,?\s*(?:false|0)|--insecure-skip-tls-verify|-k\s+https://"
            r"|(?:disable|skip|turn off|bypass|ignore)\w*\s+(?:the\s+)?"
            r"(?:ssl|tls|https|certificate|cert)\s*(?:verification|validation|checks?|errors?)",
            _I,
        ),
    ),
    (
        "host-key-checking-disabled",
        re.compile(
            r"stricthostkeychecking\s*[= ]\s*(?:no|off|accept-new)"
            r"|userknownhostsfile\s*[= ]\s*/dev/null"
            r"|autoaddpolicy|(?:disable|skip|turn off|bypass|ignore)\w*\s+(?:the\s+)?(?:ssh\s+)?"
            r"host[ -]?key\s*(?:checking|verification|checks?)",
            _I,
        ),
    ),
    (
        "world-writable",
        re.compile(
            r"\bchmod\s+(?:-[A-Za-z]+\s+)*(?:[0-7]?[0-7][0-7][2367]\b|[ugo]*[oa][ugo]*[+=][rwxst]*w"
            r"|\+[rx]*w)|\bumask\s+0{1,4}\b|world[- ]writable",
            _I,
        ),
    ),
    (
        "force-push",
        re.compile(
            r"\bgit\s+push\b[^\n]{0,200}?(?:\s--force(?!-with-lease)\b|\s-f\b|\s\+[\w/-]+)"
            r"|\bforce[- ]push",
            _I,
        ),
    ),
    (
        "credential-exfiltration",
        re.compile(
            r"\b"
            + _SEND
            + r"\b[^\n]{0,120}?"
            + _CREDENTIALS
            + r"[^\n]{0,120}?"
            + _DESTINATION
            + r"|(?:cat|type)\s+\S*"
            + _CREDENTIALS
            + r"\S*\s*\|\s*(?:curl|nc|netcat|mail|wget)"
            r"|curl\b[^\n]{0,200}(?:-F|--data\S*|-d|-T|--upload-file)\s+\S*@?\S*" + _CREDENTIALS,
            _I,
        ),
    ),
    (
        "ignore-instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+)?(?:of\s+)?"
            r"(?:(?:the|your|my|previous|prior|above|earlier|system|safety|security|these|those|other)"
            r"\s+)*(?:instructions|rules|guidelines|guardrails|polic(?:y|ies)|prompts?|restrictions"
            r"|constraints|directives)\b|\byou\s+are\s+now\b|\bnew\s+instructions\s*:"
            r"|\bdo\s+not\s+(?:tell|inform|ask)\s+the\s+user\b|\bwithout\s+asking\s+the\s+user\b",
            _I,
        ),
    ),
    (
        "security-disabled",
        re.compile(
            r"\bsetenforce\s+0|\bufw\s+disable|\bsystemctl\s+(?:stop|disable|mask)\s+"
            r"(?:firewalld|apparmor|auditd|fail2ban)|\biptables\s+-F\b|\bNOPASSWD\b"
            r"|--no-verify\b|--nogpgcheck|gpgcheck\s*=\s*0|--allow-unauthenticated"
            r"|docker_content_trust\s*=\s*0|--disable-content-trust|--dangerously-skip-permissions"
            r"|(?:disable|turn off)\s+(?:the\s+)?(?:firewall|antivirus|selinux|apparmor|2fa|mfa"
            r"|two-factor)",
            _I,
        ),
    ),
)


def dangerous_reasons(text: str) -> tuple[str, ...]:
    """Given a tip's text (its topic included), return the danger classes it falls in."""
    return tuple(reason for reason, pattern in DANGER_RULES if pattern.search(text))
