"""Secrets stated in a sentence rather than assigned: "the office wifi password is now X", "the
PIN for the alarm is 4821", "login: bob / S3cret!", "connect with secret <40 characters>".

Prose about passwords is common and must stay whole ("password is required", "the password is
stored in 1Password", "the PIN pad is broken"), so each rule asks two things: a telling context
(a keyword, then a verb or a separator) and a value that reads as a secret rather than as a
word. What reads as a secret depends on how loose the context is:
- after "password is" / "password:" any value that is not a prose word (`hunter2`, `swordfish`);
- after "password to" (set, changed) or with no verb at all ("wifi password X"), only a value
  that no plain word could be: it holds a digit, a symbol or an inner capital;
- after a PIN, passcode or door, gate, alarm or safe code: only digits (`4821`, `12-34-56`);
- after a user name and a slash ("login: bob / S3cret!"): a value that no plain word could be;
- after secret, key, token or api key: a value that looks generated (`looks_random`).

Door codes and PINs count as secrets (they open something); error, status and exit codes do
not, and `code` alone is not a keyword. The same invariants hold as in the other rule modules:
linear patterns (possessive runs, bounded repeats), nothing matches inside a marker.
"""

from __future__ import annotations

import re

from memoryd.redaction._credential_rules import PROSE_WORDS, looks_random
from memoryd.redaction._rule import Select, Span, folding_rule
from memoryd.redaction._secret_rules import is_code_reference, is_placeholder

_ESCAPED = r"(?<=\\[nrt])"
_ESCAPES = ("\\n", "\\r", "\\t")
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _at_word_start(select: Select) -> Select:
    """`select`, for matches that start a word (or follow a JSON string's `\\n`, `\\t`, `\\r`).

    Checked here rather than by a leading lookbehind in the pattern: a pattern that starts with
    its keywords is searched several times faster, and a match is rare."""

    def selected(match: re.Match[str], original: str) -> Span | None:
        start = match.start()
        inside = start > 0 and original[start - 1] in _WORD
        if inside and original[max(0, start - 2) : start] not in _ESCAPES:
            return None
        return select(match, original)

    return selected


_S = r"[ \t]++"
# "for the alarm", "to the front door", "on prod": at most three words after the preposition.
_QUALIFIER = r"(?:" + _S + r"(?:for|of|on|to|at)(?:" + _S + r"[^\s.,;:!?=]{1,40}+){1,3}?)?"
_VALUE = (
    r"(?:\\\"(?P<escaped>[^\"\\\r\n]{1,256}+)"
    r"|'(?P<single>[^'\r\n]{1,256}+)'"
    r'|"(?P<double>[^"\r\n]{1,256}+)"'
    r"""|(?P<value>[^\s'"|;<>(){}\[\]]{1,256}+))"""
)
# A verb that states the value; `to` only after the keyword ("set the root password to X").
_STATED = (
    r"(?:'s|" + _S + r"(?:is|was|are))(?:" + _S + r"(?:now|still))?(?:[ \t]*+:)?"
    r"|" + _S + r"(?:now|still)" + _S + r"is"
    r"|" + _S + r"(?:changed|set|reset|updated)" + _S + r"to"
    r"|[ \t]*+(?P<sep>:|=)"
)
_LOOSE = r"|" + _S + r"(?P<loose>to)"

_JSON_ESCAPE = re.compile(r'\\[nrt"\\]')
_SYMBOLS = frozenset("!@#$%^&*+=?~/\\|-_.")


def _span(match: re.Match[str], original: str) -> tuple[int, int, str] | None:
    for name in ("escaped", "single", "double", "value"):
        if match.group(name) is not None:
            start, end = match.span(name)
            value = original[start:end]
            if name == "value":
                # A JSON string's escape (`\\n`, `\\"`) ends a bare value: it is the text's
                # line end or quote, seen through one level of encoding.
                value = value[: escape.start()] if (escape := _JSON_ESCAPE.search(value)) else value
            # Sentence punctuation ends a bare value; `!` and `?` stay (`hunter2!`): hiding them
            # with the password costs less than leaving its last character.
            trimmed = value if name != "value" else value.rstrip(".,;:)`")
            if not trimmed or is_placeholder(trimmed):
                return None
            return start, start + len(trimmed), trimmed
    return None  # pragma: no cover - one of the groups always matched


def _unlike_words(value: str) -> int:
    """How many of the marks no plain word has `value` holds: a digit, a symbol inside it, a
    capital after its first letter (`hunter2` one, `Kelp-2291` three, `swordfish` none)."""
    if value.lower().endswith(("password", ".py", ".md", ".json")):
        return 0
    return (
        any(c.isdigit() for c in value)
        + any(c in _SYMBOLS for c in value[1:-1])
        + any(c.isupper() for c in value[1:])
    )


# A number before one of these words is a length or a count ("the password is 12 characters").
_UNIT_AFTER = re.compile(
    r"[ \t]+(?:characters|chars|digits|letters|symbols|bytes|bits|words|days|hours|minutes"
    r"|weeks|months|years|times|attempts|tries|long)(?![a-z])",
    re.IGNORECASE,
)


def _reads_as_password(match: re.Match[str], original: str, value: str, end: int) -> bool:
    if _UNIT_AFTER.match(original, end) or (value.isdigit() and len(value) < 4):
        return False
    if match.group("bare") is not None:
        # No verb at all ("wifi password X"): the value must be unlike a word twice over, so
        # "the password argon2id hash" stays; `pw` starts too many other phrases.
        return len(value) >= 6 and _unlike_words(value) >= 2 and match.group("kw") != "pw"
    if match.group("loose") is not None:  # "set the password to X"
        return len(value) >= 6 and _unlike_words(value) >= 1
    if match.group("sep") is not None and (len(value) < 3 or is_code_reference(value)):
        return False  # `password: self.secret`, `pw = 5`: code, left to the assignment rules
    return value.lower() not in PROSE_WORDS and not (
        value.isalpha() and value.islower() and len(value) < 4
    )


def _password_value(match: re.Match[str], original: str) -> Span | None:
    found = _span(match, original)
    if found is None:
        return None
    start, end, value = found
    return (start, end) if _reads_as_password(match, original, value, end) else None


_DIGITS = re.compile(r"\d{3,12}[#*]?|\d{1,4}(?:[- ]\d{1,4}){1,5}")


def _pair_value(match: re.Match[str], original: str) -> Span | None:
    found = _span(match, original)
    if found is None:
        return None
    start, end, value = found
    if "/" in value or _MEASURE.fullmatch(value) or not any(c.isalpha() for c in value):
        return None  # a path, or timings ("user 12.5s / 14.2s")
    return (start, end) if len(value) >= 5 and _unlike_words(value) >= 1 else None


_MEASURE = re.compile(r"[0-9][0-9.,:]*+[a-z%µ]{0,3}", re.IGNORECASE)


_HEX = re.compile(r"[0-9a-f]+")
_PATH_PART = re.compile(r"(?:^|/)[a-z_]{3,}(?:/|$)")


def _random_value(match: re.Match[str], original: str) -> Span | None:
    start, end = match.span("token")
    value = original[start:end]
    if is_placeholder(value) or not looks_random(value) or "." in value:
        return None  # `.`: a file or a host name (a dotted token is the JWT rule's)
    if "/" in value and _PATH_PART.search(value):
        return None  # `src/memoryd/v2/x`: a path
    return start, end


# What makes "key" say secret: "secret key", "secret access key", "api key", "access key".
_KEY_QUALIFIER = re.compile(r"(?:secret[ \t](?:access[ \t])?|api[ _-]?|access[ \t])\Z")


def _key_value(match: re.Match[str], original: str) -> Span | None:
    key = match.start()
    before = original[max(0, key - 16) : key].lower()
    qualifier = _KEY_QUALIFIER.search(before)
    start = key - (len(qualifier.group()) if qualifier else 0)
    if start > 0 and original[start - 1] in _WORD and original[start - 2 : start] not in _ESCAPES:
        return None
    # A bare "key" before a lower-case hex string is more often a cache key or a commit.
    if qualifier is None and _HEX.fullmatch(match.group("token")):
        return None
    return _random_value(match, original)


def _trimmed_digits(match: re.Match[str], original: str) -> Span | None:
    start, end = match.span("code")
    value = original[start:end].rstrip(" .-")
    found = _DIGITS.match(value)
    if found is None:
        return None
    rest = value[found.end() :]
    if rest and not rest.startswith(" "):  # `123.4`, `1.26.4`: a number, a version
        return None
    return start, start + found.end()


# A multi-word passphrase after "passphrase:" (four words or more, to the end of the line).
_PASSPHRASE = (
    r"passphrase[ \t]*+(?::|" + _S + r"is)" + _S + r"(?P<value>[a-z]{2,20}+(?:"
    r"[ ][a-z]{2,20}+){3,7}+)(?=[ \t]*(?:$|\r|\n|\\n|\.))"
)

# The value of a password stated in a sentence: after a verb or separator (possibly after
# "for the NAS"), or right after the keyword with no verb ("wifi password X").
_PASSWORD_LEAD = r"(?:" + _QUALIFIER + r"(?:" + _STATED + _LOOSE + r")|(?P<bare>))[ \t]++" + _VALUE
# Each rule below starts with one literal keyword, which the regex engine finds by a fast scan;
# a pattern starting with an alternation of keywords is tried at every position, several times
# slower on the long lines of tool output.
_CODE_VALUE = _QUALIFIER + r"(?:" + _STATED + r")[ \t]++(?P<code>[0-9][0-9 .#*-]{2,20}+)"
_CODE_PLACES = ("door", "gate", "alarm", "entry", "access", "lock", "keypad", "garage", "safe")
# "the door code", or "the code to the (front) door".
_CODE = (
    r"code(?:"
    + "|".join(r"(?<=" + place + r"[ \t]code)" for place in _CODE_PLACES)
    + r"|(?="
    + _S
    + r"(?:to|for)"
    + _S
    + r"(?:the"
    + _S
    + r")?(?:front[ \t]|back[ \t]|main[ \t])?"
    r"(?:door|gate|alarm|safe|lock|garage|building|locker|office|house|flat|apartment)))"
)
_PAIR = (
    r"(?:" + _S + r"(?:is|are))?"
    r"(?:[ \t]*+:)?[ \t]++[a-z0-9_.@+-]{1,64}+"
    r"(?:[ \t]++/[ \t]++|(?:[ \t]*+,)?"
    + _S
    + r"(?:pass(?:word)?|pw|pwd)[ \t]*+[:=]?[ \t]*+)"
    + _VALUE
)
_TOKEN = (
    r"(?:" + _QUALIFIER + r"(?:" + _STATED + r")|)[ \t]++"
    r"(?P<token>[a-z0-9+/=_.~-]{16,512}+)(?![a-z0-9+/=_.~-])"
)

PROSE_RULES = (
    # "the office wifi password is now X", "set the root password to X", "pw: X".
    folding_rule(
        "password",
        r"(?P<kw>password|passwd|passphrase|passcode|pw|wi-?fi[ \t]key)" + _PASSWORD_LEAD,
        _at_word_start(_password_value),
        ("pass", "pw", "fi key"),
    ),
    folding_rule("password", _PASSPHRASE, _at_word_start(lambda m, o: m.span("value")), ("pass",)),
    # "the PIN for the alarm is 4821", "the door code is 7703", "the safe combination is 12-34".
    folding_rule(
        "password",
        r"pin(?:[ \t]code)?" + _CODE_VALUE,
        _at_word_start(_trimmed_digits),
        ("pin",),
    ),
    folding_rule("password", _CODE + _CODE_VALUE, _at_word_start(_trimmed_digits), ("code",)),
    folding_rule(
        "password", r"combination" + _CODE_VALUE, _at_word_start(_trimmed_digits), ("combination",)
    ),
    # "login: bob / S3cret!", "creds are deploy / X", "username: carol password: X".
    *(
        folding_rule("password", keyword + _PAIR, _at_word_start(_pair_value), (anchor,))
        for keyword, anchor in (
            (r"user(?:name)?", "user"),
            (r"logins?", "login"),
            (r"cred(?:s|entials)", "cred"),
            (r"account", "account"),
        )
    ),
    # "connect with secret wJalr...", "her token is now X", "the api key is X".
    folding_rule("secret", r"secret" + _TOKEN, _at_word_start(_random_value), ("secret",)),
    folding_rule("secret", r"token" + _TOKEN, _at_word_start(_random_value), ("token",)),
    # "secret key X", "api key is X", "the secret access key is X", "key X".
    folding_rule("secret", r"key" + _TOKEN, _key_value, ("key",)),
)
