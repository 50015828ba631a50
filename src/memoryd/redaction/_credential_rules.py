"""More secret detectors for `memoryd.redaction`: provider token formats, command-line password
flags, credential files, key bodies without their header, prose passwords and high-entropy
values next to secret-looking keys.

`PROVIDER_RULES` go before the built-in rules of `memoryd.redaction._secret_rules` (a specific
kind names an overlap), `CONTEXT_RULES` after them. The same invariants hold as there: patterns
are linear
(possessive runs, bounded repeats, a lookbehind instead of a rescan), and none matches inside a
`[REDACTED:<kind>]` marker.

What counts as "random" (`looks_random`) is a documented heuristic: at least 16 characters,
letters and digits mixed, no plain words joined by dashes, and a Shannon entropy of at least 3
bits per character. It is only ever asked about a value that already sits next to a key whose
name says secret (`APP_KEY=`, `AccountKey=`), never about free text, so ids, hashes and
version strings elsewhere are left alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from memoryd.redaction._rule import LazyPattern, Rule, Span, folding_rule
from memoryd.redaction._secret_rules import is_code_reference, is_placeholder

# A token starts a word: nothing of a word before it, or the `\\n`, `\\t` or `\\r` escape of a
# JSON string (text that is itself JSON-encoded, as tool output often is).
_ESCAPED = r"(?<=\\[nrt])"
_B = r"(?:(?<![A-Za-z0-9_-])|" + _ESCAPED + ")"


_WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _starts_a_word(match: re.Match[str], original: str) -> Span | None:
    # Checked here rather than by a leading lookbehind (`_B`), which would keep the regex engine
    # from jumping straight to the token's literal prefix.
    start = match.start()
    inside = start > 0 and original[start - 1] in _WORD_CHARACTERS
    escaped = original[max(0, start - 2) : start] in ("\\n", "\\r", "\\t")
    return None if inside and not escaped else match.span()


def _token(kind: str, pattern: str, *anchors: str) -> Rule:
    return Rule(kind, LazyPattern(pattern), _starts_a_word, anchors=anchors)


def _mixed_token(match: re.Match[str], original: str) -> Span | None:
    # `hf_` and the like also start identifiers; a real token mixes cases or digits.
    value = match.group()
    has_upper = any(c.isupper() for c in value[3:])
    has_lower = any(c.islower() for c in value[3:])
    has_digit = any(c.isdigit() for c in value)
    return match.span() if (has_upper and has_lower) or (has_digit and has_upper) else None


PROVIDER_RULES: tuple[Rule, ...] = (
    _token("vault", r"hv[sbr]\.[A-Za-z0-9_-]{24,}+", "hvs.", "hvb.", "hvr."),
    Rule(
        "huggingface",
        LazyPattern(_B + r"(?:hf|api_org)_[A-Za-z0-9]{30,}+(?![A-Za-z0-9_])"),
        _mixed_token,
        ("hf_", "api_org_"),
    ),
    _token("digitalocean", r"do[por]_v1_[a-f0-9]{64}", "_v1_"),
    Rule(
        "telegram",
        LazyPattern(
            r"(?:(?<![A-Za-z0-9_:-])|"
            + _ESCAPED
            + r")[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"
        ),
        anchors=(":aa",),
    ),
    _token("shopify", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", "shp"),
    _token("twilio", r"SK[0-9a-f]{32}(?![A-Za-z0-9])", "sk"),
    _token("mailgun", r"key-[0-9a-f]{32}(?![A-Za-z0-9])", "key-"),
    _token("square", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}+", "sq0"),
    _token("databricks", r"dapi[a-f0-9]{32}(?![A-Za-z0-9])", "dapi"),
    _token("linear", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,}+", "lin_"),
    _token("postman", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "pmak-"),
    _token(
        "grafana",
        r"(?:glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}+={0,2})",
        "glsa_",
        "glc_",
    ),
    _token("newrelic", r"NRAK-[A-Z0-9]{27}", "nrak-"),
    _token("sentry", r"sntry[su]_[A-Za-z0-9+/=_-]{40,}+", "sntry"),
    _token("supabase", r"sbp_[a-f0-9]{40}", "sbp_"),
    _token("age", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", "age-secret-key-"),
    _token("replicate", r"r8_[A-Za-z0-9]{37}", "r8_"),
    _token("groq", r"gsk_[A-Za-z0-9]{40,}+", "gsk_"),
    _token("xai", r"xai-[A-Za-z0-9]{60,}+", "xai-"),
    _token("perplexity", r"pplx-[A-Za-z0-9]{40,}+", "pplx-"),
    _token("cerebras", r"csk-[a-z0-9]{40,}+", "csk-"),
    _token(
        "notion",
        r"(?:ntn_[A-Za-z0-9]{40,}+|secret_[A-Za-z0-9]{43}(?![A-Za-z0-9]))",
        "ntn_",
        "secret_",
    ),
    _token("figma", r"figd_[A-Za-z0-9_-]{40,}+", "figd_"),
    _token("doppler", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}+", "dp."),
    _token("terraform", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,}+", ".atlasv1."),
    _token("pulumi", r"pul-[a-f0-9]{40}", "pul-"),
    _token("heroku", r"HRKU-[A-Za-z0-9_-]{60,}+", "hrku-"),
    _token("atlassian", r"ATATT3[A-Za-z0-9_=-]{100,}+", "atatt3"),
    Rule(
        "discord-webhook",
        LazyPattern(
            r"discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/(?P<value>[A-Za-z0-9_-]{40,}+)"
        ),
        lambda match, original: match.span("value"),
        ("/api/webhooks/",),
    ),
)


def shannon_entropy(value: str) -> float:
    """Bits per character of `value`'s own character distribution."""
    if not value:
        return 0.0
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_WORDS_JOINED = re.compile(r"[a-z]+(?:[-_. ][a-z0-9]+)+|[A-Za-z][a-z]+(?:[A-Z][a-z]+)+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def looks_random(value: str) -> bool:
    """Given a value next to a secret-looking key, return True if it reads as generated (a key,
    a salt) rather than as a word, a name, a path or an id. See the module docstring."""
    if len(value) < 16 or "/" in value.strip("/+=")[:1]:
        return False
    if _WORDS_JOINED.fullmatch(value) or _UUID.fullmatch(value) or is_code_reference(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_letter = any(c.isalpha() for c in value)
    return has_digit and has_letter and shannon_entropy(value) >= 3.0


# Keys that name a secret only sometimes (`APP_KEY` vs `SORT_KEY`): their value must also look
# random. The keys that always do (`password`, `token`, `secret` ...) are `_secret_rules`'.
_WEAK_KEY_WORDS = frozenset({"key", "keys", "auth", "salt", "cookie", "pat", "seed", "dsn", "pin"})
_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def _last_key_word(key: str) -> str:
    words = _KEY_WORD.findall(key)
    return words[-1].lower() if words else ""


_KEY_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_KEY_REACH = 80


def _random_value(match: re.Match[str], original: str) -> Span | None:
    # The match starts at the key's last word; the whole key is found by walking back over key
    # characters (at most `_KEY_REACH`), which keeps the search anchored on those few words.
    key_start = match.start()
    floor = max(0, key_start - _KEY_REACH)
    while key_start > floor and original[key_start - 1] in _KEY_CHARACTERS:
        key_start -= 1
    key = original[key_start : match.end("word")]
    start, end = match.span("value")
    value = original[start:end]
    if _last_key_word(key) not in _WEAK_KEY_WORDS or is_placeholder(value):
        return None
    return (start, end) if looks_random(value) else None


# `APP_KEY=base64:...`, `"AccountKey": "..."`, `export STRIPE_KEY=...`: a key ending in a weak
# word, an optional quote, `=` or `:`, an optional quote, then a value of key-like characters.
_KEYED_VALUE = (
    r"(?P<word>keys?|auth|salt|cookie|pat|seed|dsn|pin)(?:\\?[\"'])?[ \t]*(?:=|:)[ \t]*"
    r"(?:\\?[\"'])?(?:base64:)?(?P<value>[a-z0-9+/=_.~-]{16,512}+)"
)


def _password_value(match: re.Match[str], original: str) -> Span | None:
    for name in ("single", "double", "value"):
        if name in match.re.groupindex and match.group(name) is not None:
            start, end = match.span(name)
            value = original[start:end]
            trimmed = value.rstrip(".,;:!?)`")
            if not trimmed or is_placeholder(trimmed):
                return None
            return start, start + len(trimmed)
    return None  # pragma: no cover - one of the groups always matched


_FLAG_VALUE = (
    r"(?:'(?P<single>[^'\r\n]{1,256}+)'"
    r'|"(?P<double>[^"\r\n]{1,256}+)"'
    r"""|(?P<value>[^\s'"|;&]{1,256}+))"""
)
_SPACE = r"(?:[ \t\r\n]|\\[tn])"

# Words that follow "password is" in prose without being a password (also read by
# `memoryd.redaction._prose_rules`).
PROSE_WORDS = frozenset(
    {
        *("a", "an", "the", "not", "now", "no", "set", "too", "still", "also", "just", "being"),
        *("been", "only", "in", "on", "at", "of", "for", "to", "correct", "incorrect", "wrong"),
        *("right", "invalid", "valid", "required", "optional", "missing", "empty", "blank"),
        *("stored", "saved", "hidden", "encrypted", "hashed", "expired", "changed", "reset"),
        *("different", "same", "weak", "strong", "long", "short", "case", "sensitive"),
        *("protected", "needed", "necessary", "mandatory", "visible", "shown", "displayed"),
        *("there", "here", "your", "my", "his", "her", "their", "our", "its", "this", "that"),
        *("what", "which", "it", "unknown", "known", "ok", "okay", "fine", "good", "bad"),
        *("secure", "insecure", "simple", "complex", "easy", "hard", "generated", "random"),
        *("managed", "rotated", "kept", "sent", "shared", "written", "typed", "entered", "used"),
        *("accepted", "rejected", "ignored", "supported", "handled", "working", "broken"),
        *("disabled", "enabled", "configured", "defined", "given", "provided", "about", "going"),
        *("supposed", "expiring", "due", "printed", "listed", "synced", "see", "ask", "check"),
        *("use", "whatever", "something", "anything", "nothing", "none", "unchanged"),
    }
)


def _prose_value(match: re.Match[str], original: str) -> Span | None:
    span = _password_value(match, original)
    if span is None:
        return None
    value = original[span[0] : span[1]]
    if value.lower() in PROSE_WORDS or (value.isalpha() and value.islower() and len(value) < 4):
        return None
    return span


CONTEXT_RULES: tuple[Rule, ...] = (
    # `mysql -u root -pS3cret db`: the password glued to `-p` (`-P` is the port).
    Rule(
        "password",
        LazyPattern(
            _B + r"(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow"
            r"|mysqlpump|mariadb|mariadb-dump)(?:[ \t]++[^\s|;&]++){0,20}?[ \t]++-p" + _FLAG_VALUE
        ),
        _password_value,
        ("mysql", "mariadb"),
    ),
    # `curl -u user:pass`, `curl --user=user:pass`: the password after the colon.
    Rule(
        "password",
        LazyPattern(
            _B + r"curl(?:[ \t]++[^\s|;&]++){0,20}?[ \t]++(?:-u|--user)(?:[ \t]++|=)"
            r"['\"]?[^\s:'\"]{1,256}+:(?P<value>[^\s'\"]{1,256}+)"
        ),
        _password_value,
        ("curl",),
    ),
    # `sshpass -p 'secret' ssh host`, `sshpass -psecret`.
    Rule(
        "password",
        LazyPattern(r"sshpass(?:[ \t]++-[A-Za-z]++)*?[ \t]++-p[ \t]*+" + _FLAG_VALUE),
        _password_value,
        ("sshpass",),
    ),
    # A `.netrc` entry: `machine host login user password secret`, on one line or several.
    folding_rule(
        "password",
        # Both keywords are 7 letters: the lookbehind after them checks the character before.
        r"(?:machine|default)(?:(?<![a-z0-9_-].{7})|(?<=\\[nrt].{7}))(?:(?<=machine)(?:"
        + _SPACE
        + r")++[^\s\\]++)?"
        r"(?:" + _SPACE + r")++"
        r"login(?:" + _SPACE + r")++[^\s\\]++(?:" + _SPACE + r")++"
        r"password(?:" + _SPACE + r")++" + _FLAG_VALUE,
        _prose_value,
        ("machine", "default"),
    ),
    # An AWS credentials CSV: the secret access key beside its key id, and the console password
    # in the row under a `User name,Password,Access key ID` header.
    Rule(
        "aws-secret-access-key",
        LazyPattern(
            r"(?:AKIA|ASIA)[A-Z0-9]{16}[ \t]*[,;\t|][ \t]*(?P<value>[A-Za-z0-9/+]{40})"
            r"(?![A-Za-z0-9/+=])"
        ),
        lambda match, original: match.span("value"),
        ("akia", "asia"),
    ),
    folding_rule(
        "password",
        r"user[ ]name,password,access[ ]key[ ]id[^\r\n\\]*+(?:\r?\n|(?:\\r)?\\n)[^,\r\n\\]*+,"
        r"(?P<value>[^,\r\n\\]++),",
        lambda match, original: match.span("value"),
        ("access key id",),
    ),
    # The base64 body of a private key pasted without its `-----BEGIN` line, recognised by the
    # DER or OpenSSH prefix every such key starts with (PKCS#1, PKCS#8, SEC1, openssh-key-v1),
    # up to its last base64 line.
    Rule(
        "private-key",
        LazyPattern(
            r"(?:(?<![A-Za-z0-9+/])|"
            + _ESCAPED
            + r")(?:MII[A-Za-z0-9+/]{3}IBA(?:AKC|DAN)|MIG[A-Za-z0-9+/]AgEAMBMGByqGSM49"
            r"|MHcCAQEE|MIHcAgEBBEI|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=]*+"
            r"(?:(?:\r?\n|(?:\\r)?\\n)[ \t]*+[A-Za-z0-9+/=]{16,}+)*+"
        ),
        anchors=("iba", "agea", "mhccaqee", "mihcagebbei", "b3blbnnzac1rzxktdje"),
    ),
    # Azure storage and Service Bus connection strings, and SAS signatures in URLs.
    folding_rule(
        "azure",
        r"(?:accountkey|sharedaccesskey|sharedaccesssignature)[ \t]*=[ \t]*"
        r"(?P<value>[a-z0-9+/=%]{20,}+)",
        lambda match, original: match.span("value"),
        ("accountkey", "sharedaccess"),
    ),
    Rule(
        "azure",
        LazyPattern(r"[?&]sig=(?P<value>[A-Za-z0-9%+/=]{20,}+)"),
        lambda match, original: match.span("value"),
        ("sig=",),
    ),
    folding_rule("secret", _KEYED_VALUE, _random_value, tuple(sorted(_WEAK_KEY_WORDS))),
)
