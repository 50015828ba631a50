"""The classes of skill tips and tacit lines the safety gate holds for review.

`DANGER_RULES` pairs each reason with the pattern that finds it in a tip's words: tips that run
remote or hidden code, open the machine to others, leak secrets, destroy data or rewrite shared
history. `dangerous_reasons` also follows a downloaded or decoded file to the command that runs
it (`curl -o x URL && sh x`), and lets a rule's match pass when the words right before it forbid
it ("never force-push to main", "do not disable TLS verification"). The heartbeat's gate
(`memoryd.extractors.gate`) holds a tip that falls in a class; the weekly consolidation
(`memoryd.rewrite.consolidate`) refuses an answer that introduces such a tip where none of the
tips it merges had it. They live in the store package because both jobs use them and neither may
import the other. docs/operators-guide.md section 12 lists what each catches and what none can.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Final

_I = re.IGNORECASE
# A shell as the command that reads a pipe (`| sh`, `| sudo -E bash -s`), not `shellcheck`.
_SHELL = r"(?:sudo\s+(?:-\S+\s+)*)?(?:/usr)?(?:/bin/)?(?:ba|z|da|k|fi|c|tc|a)?sh(?=\s|$|[\"');&|])"
# An interpreter reading its program from the pipe: no argument, or only `-`.
_STDIN_INTERPRETER = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:python[0-9.]*|perl|ruby|node|php|pwsh|powershell)"
    r"(?:\s+-)?(?=\s*(?:$|[;&|)\"']))"
)
_RUNNER = r"(?:" + _SHELL + r"|" + _STDIN_INTERPRETER + r"|iex\b|invoke-expression\b)"
_DOWNLOADER = r"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch)\b"
_CREDENTIALS = (
    r"(?:id_(?:rsa|dsa|ecdsa|ed25519)\b|\.ssh\b|private[ _-]?keys?\b|\.aws/credentials|credentials?"
    r"|passwords?\b|passwd\b|/etc/shadow|tokens?\b|api[ _-]?keys?\b|secrets?\b|\.env\b|\.netrc\b"
    r"|kubeconfig|\.kube/config|keychain|cookies?\b|ssh keys?\b|seed phrase|wallet|\.gnupg\b)"
)
_SEND = (
    r"(?:e-?mail|mail|send|sending|upload|uploading|post|posting|paste|share|forward|exfiltrate"
    r"|transfer|submit|scp|rsync|nc|netcat|curl|wget)"
)
_NETWORK = r"(?:curl|wget|nc|ncat|netcat|socat|mail|sendmail)\b"
# A destination: an address, a URL, a host, or "to <something>".
_DESTINATION = r"(?:\S+@\S+\.\w+|https?://|ftp://|pastebin|gist\b|webhook|\bto\s+\S+)"
# What `rm -r` must never be pointed at: the root, the home folder, or a system folder, whole.
_PRECIOUS = (
    r"[\"']?(?:/|/\*|~|~/|~/\*|\$HOME|\$\{HOME\}|\"\$HOME\"|/(?:etc|usr|bin|sbin|boot|lib|root"
    r"|home|var|opt|srv))/?\*?[\"']?(?=\s|$|[;&|)])"
)
_DISK = r"/dev/(?:sd[a-z]|hd[a-z]|nvme\d|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d|md\d)"

# (reason, pattern): each class the gate holds, in the words a tip would use.
DANGER_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "pipe-to-shell",
        re.compile(
            _DOWNLOADER
            + r"[^|\n]{0,300}\|\s*"
            + _RUNNER
            + r"|(?:(?:ba|z|k)?sh|source|\.)\s+(?:-\S+\s+)*[\"']?<\(\s*(?:curl|wget)"
            r"|\bpip(?:e|ed|ing)?\b[^\n]{0,120}?\b(?:to|into)\s+(?:a\s+)?(?:sudo\s+)?"
            r"(?:ba|z)?(?:sh|shell)\b",
            _I,
        ),
    ),
    (
        "remote-code",
        re.compile(
            r"(?:\s-c|\s-e|\beval|\bexec|\bsource|-command)\s+[\"']?\$\(\s*"
            + _DOWNLOADER
            + r"|\biex\s*\(\s*(?:new-object|iwr|irm|invoke-)"
            r"|invoke-expression\s*\(\s*(?:new-object|iwr|irm|invoke-)"
            r"|\.downloadstring\s*\("
            r"|\b(?:exec|eval)\s*\([^\n]{0,80}(?:urlopen|requests\.get|file_get_contents|fetch)"
            r"|(?:file_get_contents|urlopen)\s*\(\s*[\"']https?://[^\n]{0,80}\)\s*\)",
            _I,
        ),
    ),
    (
        "decoded-payload",
        re.compile(
            r"(?:\bbase(?:64|32)\s+(?:-\S+\s+)*(?:-d|-D|--decode)\b|\bxxd\s+(?:-\S+\s+)*-r"
            r"|\brev\b|\bopenssl\s+(?:enc\s+|base64\s+)?[^|\n]{0,40}-d\b|\buudecode\b)"
            r"[^|\n]{0,120}\|\s*" + _RUNNER + r"|\beval\s+[\"']?\$\([^)\n]{0,200}\bbase(?:64|32)\b"
            r"|-enc(?:odedcommand)?\s+[A-Za-z0-9+/=]{12,}"
            r"|b64decode[^\n]{0,80}\b(?:os\.system|exec|eval|subprocess)"
            r"|\b(?:os\.system|exec|eval|subprocess\.\w+)\s*\([^\n]{0,40}b64decode",
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
        "ssh-key-planted",
        re.compile(
            r">>?\s*[\"']?\S*authorized_keys|\btee\s+(?:-\S+\s+)*\S*authorized_keys"
            r"|\bssh-copy-id\b"
            r"|\b(?:add|append|put|insert|install|copy|write|paste)\w*\b[^\n]{0,80}"
            r"\bauthorized_keys\b",
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
        "privilege-escalation",
        re.compile(
            r"\bchmod\s+(?:-[A-Za-z]+\s+)*(?:[ugoa]*\+[rwx]*s|[2467][0-7]{3}\b)"
            r"|\bchown\s+(?:-\S+\s+)*\S+\s+"
            + _PRECIOUS
            + r"|(?:>>?|\btee\b[^\n|]{0,20})\s*/etc/sudoers"
            r"|\bALL\s*=\s*\(ALL(?::ALL)?\)"
            r"|\b(?:add|put)\w*\b[^\n]{0,60}\bsudoers\b"
            r"|\busermod\s+(?:-\S+\s+)*-\w*G\w*\s+(?:\S+,)?(?:sudo|wheel|admin|root)\b"
            r"|\bpasswd\s+(?:-\S+\s+)*-d\b",
            _I,
        ),
    ),
    (
        "force-push",
        re.compile(
            r"\bgit\s+push\b[^\n]{0,200}?(?:\s--force(?!-with-lease)\b|\s-f\b|\s\+[\w/-]+)"
            r"|\bgit\s+push\b[^\n]{0,200}?--force-with-lease\S*\s+(?:\S+\s+)?"
            r"(?:main|master|trunk|release|production|prod)\b"
            r"|\bgit\s+push\b[^\n]{0,200}?\s--mirror\b|\bforce[- ]push",
            _I,
        ),
    ),
    (
        "history-rewrite",
        re.compile(
            r"\bgit\s+(?:filter-branch|filter-repo)\b|\bgit\s+update-ref\s+-d\b|\bbfg\b", _I
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
            + r"|(?:cat|type|tar|zip|gpg)\s[^|\n]{0,60}"
            + _CREDENTIALS
            + r"\S*[^|\n]{0,40}\|\s*"
            + _NETWORK
            + r"|(?:curl|wget)\b[^\n]{0,200}(?:-F|--data\S*|-d|-T|--upload-file|--post-file)"
            r"[\s=]+\S*@?\S*"
            + _CREDENTIALS
            + r"|\b(?:nc|ncat|netcat|socat)\b[^\n]{0,120}<\s*\S*"
            + _CREDENTIALS
            + r"|\b(?:scp|rsync)\b[^\n]{0,80}?"
            + _CREDENTIALS
            + r"\S*\s+\S+:"
            r"|(?:^|[;&|(]\s*|\s)(?:env|printenv|set|export\s+-p)\s*\|\s*"
            + _NETWORK
            + r"|/proc/\S*environ[^\n]{0,60}\|\s*"
            + _NETWORK
            + r"|(?:curl|wget)\b[^\n]{0,200}(?:[?&]\w+=\$\{?\w*"
            r"(?:token|secret|key|password|pass)\w*|aws_secret_access_key)",
            _I,
        ),
    ),
    (
        "destructive",
        re.compile(
            r"--no-preserve-root"
            r"|\brm\s+(?:-\S+\s+)*-[a-z]*r[a-z]*\s+(?:-\S+\s+)*"
            + _PRECIOUS
            + r"|\bdd\b[^\n]{0,100}\bof="
            + _DISK
            + r"|\bmkfs(?:\.\w+)?\s|\bwipefs\s|\bshred\b[^\n]{0,40}/dev/|>\s*"
            + _DISK
            + r"|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}",
            _I,
        ),
    ),
    (
        "logging-disabled",
        re.compile(
            r"\bsystemctl\s+(?:stop|disable|mask)\s+(?:--now\s+)?"
            r"(?:auditd|rsyslog|syslog|syslog-ng|systemd-journald|journald)\b"
            r"|\bauditctl\s+(?:-\S+\s+)*-e\s*0|\bunset\s+HISTFILE\b|\bHISTFILE=/dev/null"
            r"|\bHISTSIZE=0\b|\bhistory\s+-c\b|\bset\s+\+o\s+history"
            r"|(?:\brm|\bshred|\btruncate|>)\s*(?:-\S+\s+)*~?/?\S*_history\b"
            r"|\bln\s+-\w*s\w*\s+/dev/null\s+\S*history"
            r"|(?:\brm|\bshred|\btruncate)\s+(?:-\S+\s+)*(?:\d+\s+)?/var/log\b|>\s*/var/log/",
            _I,
        ),
    ),
    (
        "persistence",
        re.compile(
            r"\|\s*crontab\s+-\s*(?:$|[;&)\n\"'])|>>?\s*/etc/cron|@reboot\b"
            r"|/dev/(?:tcp|udp)/|\b(?:nc|ncat|netcat)\b[^\n]{0,60}\s-[ec]\s"
            r"|\bsocat\b[^\n]{0,80}\bexec:|\bmkfifo\b[^\n]{0,80}\|\s*(?:nc|ncat|netcat)\b",
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
            r"\bsetenforce\s+0|\bufw\s+(?:--force\s+)?disable|\bsystemctl\s+(?:stop|disable|mask)\s+(?:--now\s+)?"
            r"(?:firewalld|apparmor|fail2ban|ufw|nftables|iptables)\b"
            r"|\biptables\s+(?:-t\s+\S+\s+)?(?:-F|--flush|-X|-P\s+\w+\s+ACCEPT)\b"
            r"|\bnft\s+flush\b|\bnetsh\s+advfirewall\s+set\s+\w+\s+state\s+off"
            r"|set-mppreference\s+-disable\w+\s+\$?true|\bselinux\s*=\s*(?:disabled|permissive)"
            r"|\bNOPASSWD\b"
            r"|--no-verify\b|--nogpgcheck|gpgcheck\s*=\s*0|--allow-unauthenticated"
            r"|docker_content_trust\s*=\s*0|--disable-content-trust|--dangerously-skip-permissions"
            r"|(?:disable|turn off)\s+(?:the\s+)?(?:firewall|antivirus|selinux|apparmor|2fa|mfa"
            r"|two-factor)",
            _I,
        ),
    ),
)

# Words at least one of which every match of a rule contains (lowercase): a tip with none of
# them skips the rule's pattern, which keeps the gate cheap on prose. A rule not named here is
# always tried.
RULE_TRIGGERS: Final[dict[str, tuple[str, ...]]] = {
    "pipe-to-shell": ("curl", "wget", "iwr", "irm", "invoke-", "fetch", "pip"),
    "remote-code": (
        *("curl", "wget", "iwr", "irm", "invoke-", "fetch", "iex", "downloadstring"),
        *("urlopen", "requests.get", "file_get_contents"),
    ),
    "decoded-payload": ("base64", "base32", "xxd", "rev", "openssl", "uudecode", "enc", "b64"),
    "tls-verification-disabled": (
        *("curl", "check-certificate", "verify", "tls", "ssl", "trusted-host", "insecure"),
        *("-k", "cert", "https", "rejectunauthorized"),
    ),
    "host-key-checking-disabled": (
        "stricthostkeychecking",
        "userknownhostsfile",
        "autoadd",
        "host",
    ),
    "ssh-key-planted": ("authorized_keys", "ssh-copy-id"),
    "world-writable": ("chmod", "umask", "world"),
    "privilege-escalation": ("chmod", "chown", "sudoers", "all", "usermod", "passwd"),
    "force-push": ("push",),
    "history-rewrite": ("filter-", "update-ref", "bfg"),
    "destructive": ("no-preserve-root", "rm", "dd", "mkfs", "wipefs", "shred", "/dev/", ":()"),
    "logging-disabled": ("systemctl", "auditctl", "hist", "/var/log"),
    "persistence": ("crontab", "/etc/cron", "@reboot", "/dev/", "nc", "netcat", "socat", "mkfifo"),
    "security-disabled": (
        *("setenforce", "ufw", "systemctl", "iptables", "nft", "netsh", "mppreference"),
        *("selinux", "nopasswd", "no-verify", "gpgcheck", "allow-unauthenticated", "content"),
        *("dangerously", "disable", "turn off"),
    ),
}

# Words right before a match that forbid what it says: "never", "do not (run|use|...)".
_FORBIDDEN: Final = re.compile(
    r"(?:\bnever|\bdo\s+not|\bdon'?t|\bavoid|\bnot)\s+(?:(?:ever|run|running|use|using|set"
    r"|setting|pass|passing|add|adding|do|call|type)\s+)?[\"'`]?$",
    _I,
)
_FORBIDDEN_REACH: Final = 40


def _allowed(text: str, match: re.Match[str]) -> bool:
    """Whether the words right before `match` forbid what it says (then it is not a danger)."""
    start = match.start()
    while start < len(text) and text[start].isspace():
        start += 1
    return _FORBIDDEN.search(text[max(0, start - _FORBIDDEN_REACH) : start]) is not None


# The command pieces of a tip, for following a file from where it is written to where it runs.
_PIECES: Final = re.compile(r"&&|\|\||;|,|\n|\bthen\b|\band\b", _I)
_PRODUCER: Final = re.compile(
    _DOWNLOADER + r"|\bdownload\w*\b|\bbase(?:64|32)\b[^\n]{0,40}-(?:d|D|-decode)\b"
    r"|\bxxd\s+(?:-\S+\s+)*-r",
    _I,
)
_WRITTEN: Final = re.compile(
    r"(?:\s-[a-z]*o\s*|\s-O\s+|--output(?:-document)?[= ]|-outfile\s+|>\s*|\bto\s+)"
    r"[\"']?([^\s\"';&|]+)"
    r"|https?://[^\s\"']*/([^/\s\"'?#]+)(?=[\s\"']|$)",
)
_LAUNCH: Final = re.compile(
    r"^\s*(?:(?:run|and|then|sudo|exec|just|execute|start)\s+(?:-\S+\s+)*)*"
    r"(?:(?:(?:ba|z|da|k|fi|c|tc|a)?sh|source|\.|python[0-9.]*|perl|ruby|node|php|pwsh"
    r"|powershell)\s+(?:-\S+\s+)*[\"']?([^\s\"';&|]+)|[\"']?((?:\.{1,2}|~)?[/\\][^\s\"';&|]+))",
    _I,
)


def _name(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).name.lower()


def _runs_what_it_fetched(text: str) -> bool:
    """Whether a tip writes a downloaded or decoded file and then runs it, in one or two steps
    (`curl -o x URL && sh x`, `wget URL -O f; chmod +x f && ./f`, `base64 -d b > r.sh; sh r.sh`)."""
    if _PRODUCER.search(text) is None:
        return False
    written: set[str] = set()
    for piece in _PIECES.split(text):
        if _PRODUCER.search(piece):
            for match in _WRITTEN.finditer(piece):
                name = _name(match.group(1) or match.group(2) or "")
                if name:
                    written.add(name)
            continue
        launch = _LAUNCH.match(piece)
        if written and launch and _name(launch.group(1) or launch.group(2) or "") in written:
            return True
    return False


def dangerous_reasons(text: str) -> tuple[str, ...]:
    """Given a tip's text (its topic included), return the danger classes it falls in."""
    lowered = text.lower()
    reasons = [
        reason
        for reason, pattern in DANGER_RULES
        if any(word in lowered for word in RULE_TRIGGERS.get(reason, ("",)))
        and any(not _allowed(text, match) for match in pattern.finditer(text))
    ]
    if "pipe-to-shell" not in reasons and _runs_what_it_fetched(text):
        reasons.insert(0, "download-then-run")
    return tuple(reasons)
