"""The built-in secret detectors behind `memoryd.redaction`: one `Rule` per kind of secret.

A rule is a compiled pattern plus a `select` function that, given a match, returns the span to
redact (often only the value part of the match: the password of a URL, the value of an
assignment) or None when the match is a near-miss (a placeholder, prose, code).

Invariants every pattern here keeps, because transcripts are untrusted and can be huge:
- no nested or overlapping quantifiers that could backtrack; long runs use possessive
  quantifiers (`++`, `{n,}+`, Python >= 3.11), values are bounded, so matching is linear in the
  length of the text;
- no pattern matches inside a redaction marker `[REDACTED:<kind>]` (the marker's characters
  never form a key, a keyword followed by `=`/`:`, or a value), which keeps redaction idempotent.
"""

from __future__ import annotations

import re

from memoryd.redaction._rule import LazyPattern, Rule, Span, folding_rule


def _value(match: re.Match[str], original: str) -> Span | None:
    return match.span("value")


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _whole_if_random(match: re.Match[str], original: str) -> Span | None:
    # Prefixes like `sk-` or `xoxb-` also start ordinary kebab-case words; a real key's random
    # tail always mixes digits and letters, a word almost never does.
    return match.span() if _has_digit_and_letter(match.group()) else None


def _value_if_random(match: re.Match[str], original: str) -> Span | None:
    return match.span("value") if _has_digit_and_letter(match.group("value")) else None


# Values that show where a secret would go without being one. Redacting them would hide useful
# structure ("the config needs a password here") and protect nothing. Documented decision: a
# masked value (`********`), a template or variable reference (`<your-key>`, `${API_KEY}`,
# `$API_KEY`, `{{ secrets.X }}`, `%API_KEY%`) and the usual "empty" words are left alone.
_PLACEHOLDER_WORDS = frozenset(
    {
        "",
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "redacted",
        "hidden",
        "masked",
        "required",
        "optional",
        "string",
        "str",
        "bytes",
        "int",
        "number",
        "secretstr",
        "password",
        "secret",
        "token",
        "xxx",
        "todo",
        "tbd",
        "env",
    }
)
_PLACEHOLDER = re.compile(
    r"""
    [*xX•.#?_-]+                          # masked or elided: ********, xxxx, ...
    | <[^<>]*>                            # <your-key>
    | \$\{[^{}]*\}  | \$\([^()]*\)        # ${API_KEY}, $(pass show x)
    | \$[A-Za-z_][A-Za-z0-9_]*            # $API_KEY
    | \{\{.*\}\}  | \{[A-Za-z_][A-Za-z0-9_.]*\}   # {{ secrets.X }}, {api_key}
    | %[A-Za-z_][A-Za-z0-9_]*%            # %API_KEY%
    | %\([A-Za-z_]+\)s                    # %(password)s
    | (?i:your|example)[-_ ].*            # your-api-key-here
    | .{0,24}(?:\.\.\.|…|\*{3}|(?i:xxxx)).{0,24}  # elided: sk-ant-..., ghp_xxxx, abc***
    | \[REDACTED[^\]]*\]?                 # already redacted by memoryd or by someone else
    """,
    re.VERBOSE | re.DOTALL,
)
# The name of an environment variable (`"apiKey": "OLLAMA_API_KEY"`) stands for its value.
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
# `self.token`, `config.password`: an attribute access in code, not a literal secret.
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def is_placeholder(value: str) -> bool:
    """Given an assigned value, return True if it stands for a secret instead of being one."""
    stripped = value.strip()
    return (
        stripped.lower() in _PLACEHOLDER_WORDS
        or _PLACEHOLDER.fullmatch(stripped) is not None
        or not any(c.isalnum() for c in stripped)  # punctuation: `"apiKey`:"},{"`
        or _ENV_NAME.fullmatch(stripped) is not None
    )


# What may follow a YAML-style value on its line: a line end (any that `str.splitlines` knows,
# or a JSON string's two-character `\n`), the end of a flow mapping or list, or a comment.
_LINE_END = "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029,}]#"


def _rest_of_line_is_empty(text: str, position: int) -> bool:
    rest = text[position : position + 64].lstrip(" \t")
    return rest == "" or rest[0] in _LINE_END or rest.startswith("\\n")


# Keywords whose assigned value is a secret. A keyword must end the key name (`DB_PASSWORD=`,
# `"client_secret":`), so `password_hash`, `max_tokens` and `token_count` are not keys.
# `pass` and `pwd` only as a word of the key (`DB_PASS`, `MYSQL_PWD`), never inside one
# (`bypass`, `compass`) nor alone (`PWD=/home/x` is the working directory).
_LOGIN_KEYWORDS = (
    r"password|passwd|passphrase|passwort|pass_?word|(?:(?<![a-z])|(?<=\\[nrt]))pass|(?<=[_-])pwd"
)
_CREDENTIAL_KEYWORDS = (
    r"secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key"
    r"|auth[_-]?key|signing[_-]?key|encryption[_-]?key|credentials?|key[_-]?base"
)
_ASSIGNMENT = r"""
    (?:{keys})(?![A-Za-z0-9_])
    (?:\\?["'`])?[ \t]*(?P<sep>:=|=>|=(?!=)|:)[ \t]*
    (?:
        \\"(?P<escaped_double>[^"\\\r\n]{{1,1024}}+)
      | \\'(?P<escaped_single>[^'\\\r\n]{{1,1024}}+)
      | "(?P<double>(?:[^"\\\r\n]|\\[^\r\n]){{1,1024}}+)
      | '(?P<single>(?:[^'\\\r\n]|\\[^\r\n]){{1,1024}}+)
      | (?P<bare>[^\s"'`,;&(){{}}\[\]<>]{{1,1024}}+)
    )
"""
_QUOTED_GROUPS = ("escaped_double", "escaped_single", "double", "single")


# Words that follow `apiKey =` or `token:` in code without being a value: keywords that start
# an expression (`const apiKey = await getKey()`) and type names (`isOAuthToken: boolean`).
_CODE_WORDS = frozenset(
    {
        *("await", "async", "new", "this", "self", "function", "lambda", "yield", "typeof"),
        *("require", "import", "not", "boolean", "bool", "any", "unknown", "object", "void"),
        *("never", "optional", "float", "integer", "buffer", "uint8array", "record", "promise"),
        *("array", "list", "dict"),
    }
)
# A variable or function name as a value (`{ _csrf_token: csrfToken }`, `resolveApiKey:
# getApiKey`): letters only, in camelCase, snake_case or SCREAMING_CASE with an underscore.
_IDENTIFIER = re.compile(
    r"[a-z]+(?:[A-Z][a-z]*)+|[A-Za-z]+(?:_[A-Za-z]+)+|_[A-Za-z_]+|(?:[a-z]+\??\.)+[A-Za-z]+"
)
# A JSON string's escape (`\n`, `\t`, `\"`) ends a bare value: it is the text's line end or
# quote, seen through one level of encoding.
_JSON_ESCAPE = re.compile(r'\\[nrt"]')


def is_code_reference(value: str) -> bool:
    """Given an assigned bare value, return True if it reads as code (a keyword, a type name, a
    variable or attribute name) rather than as a literal secret."""
    return (
        value.lower() in _CODE_WORDS
        or _IDENTIFIER.fullmatch(value) is not None
        or _DOTTED_NAME.fullmatch(value.replace("?.", ".")) is not None
    )


def _assignment_value(match: re.Match[str], original: str) -> Span | None:
    for group in _QUOTED_GROUPS:
        if match.group(group) is not None:
            start, end = match.span(group)
            return None if is_placeholder(original[start:end]) else (start, end)
    start, end = match.span("bare")
    value, text = original[start:end], original
    if escape := _JSON_ESCAPE.search(value):
        value, end = value[: escape.start()], start + escape.start()
    if len(value) < 3 or is_placeholder(value) or is_code_reference(value):
        return None
    if end < len(text) and text[end] in "([<":  # a call, an index or a generic type
        return None
    # `Password: at least 8 characters` is prose; `password: hunter2` at the end of a line is a
    # YAML value, and so is a value that is no plain word (`password: s3cr3t! then ...`). An `=`
    # assignment needs no such check: prose rarely writes `password=`.
    prose_like = value.isalpha() or len(value) < 6
    if match.group("sep") == ":" and prose_like and not _rest_of_line_is_empty(text, end):
        return None
    return start, end


def _assignment_rule(kind: str, keys: str, anchors: tuple[str, ...]) -> Rule:
    return folding_rule(kind, _ASSIGNMENT.format(keys=keys), _assignment_value, anchors)


def _flag_value(match: re.Match[str], original: str) -> Span | None:
    # Quoting or punctuation after a flag's value in prose (`--api-key <key>`` in Markdown)
    # is not part of the value.
    start, end = match.span("value")
    value = original[start:end]
    trimmed = value.rstrip("`'\"),.;:")
    if not trimmed or is_placeholder(trimmed):
        return None
    return start, end - (len(value) - len(trimmed))


def _url_password(match: re.Match[str], original: str) -> Span | None:
    return None if is_placeholder(match.group("value")) else match.span("value")


# A PEM private key. A complete block is everything from the header to the footer; the body
# is scanned possessively up to the next `-----`, so many headers without footers stay linear.
_PEM_HEADER = r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_FOOTER = r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PRIVATE_KEY_BLOCK = LazyPattern(_PEM_HEADER + r"(?:[^-]++|-(?!----))*+" + _PEM_FOOTER)
# A block cut short (a truncated paste, a cut tool output) has no footer: it is hidden up to its
# last base64 line, lines being separated by real newlines or by the two-character `\n` of a
# JSON string. A base64 line must end its line, so prose after a truncated block is kept.
_LINE_BREAK = r"(?:\r?\n|(?:\\r)?\\n)"
_PRIVATE_KEY_TRUNCATED = LazyPattern(
    _PEM_HEADER + r"(?:(?:[ \t]*+" + _LINE_BREAK + r")++[ \t]*+"
    r"(?:(?:Proc-Type|DEK-Info|Comment|Version):[^\r\n\\]*+"
    r"|[A-Za-z0-9+/=]++(?=[ \t]*(?:\r?\n|(?:\\r)?\\n|[\"',]|$))))*+"
)

_ANY = r"[A-Za-z0-9_-]"

# Order matters only for naming: when two rules find overlapping secrets, the span is the union
# and the kind is that of the earliest-starting hit, ties going to the rule listed first. So the
# specific provider rules come before the generic ones (bearer, assignments).
# Where a pattern starts with a literal, a lookbehind that checks the character before it comes
# after the literal, so that the regex engine can still jump from one occurrence of the literal
# to the next instead of trying every position.
BUILTIN_RULES: tuple[Rule, ...] = (
    Rule("private-key", _PRIVATE_KEY_BLOCK, anchors=("private key",)),
    Rule("private-key", _PRIVATE_KEY_TRUNCATED, anchors=("private key",)),
    Rule(
        "anthropic",
        LazyPattern(r"sk-ant-[a-z]{2,8}\d{2}-" + _ANY + r"{20,}+"),
        anchors=("sk-ant-",),
    ),
    Rule(
        "openai",
        LazyPattern(
            r"sk-(?:(?<![A-Za-z0-9_-]sk-)|(?<=\\[nrt]sk-))(?!ant-)(?:(?:proj|svcacct|admin|None)-)?"
            + _ANY
            + r"{20,}+"
        ),
        _whole_if_random,
        anchors=("sk-",),
    ),
    Rule(
        "aws-access-key-id",
        LazyPattern(
            r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])(?:(?<![A-Za-z0-9].{4})|(?<=\\[nrt].{4}))[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        anchors=("akia", "asia", "abia", "acca", "a3t"),
    ),
    folding_rule(
        "aws-secret-access-key",
        r"(?:aws[_.-]?)?secret[_.-]?access[_.-]?key(?:\\?[\"'])?[ \t]*(?::|=>|=)[ \t]*"
        r"(?:\\?[\"'])?(?P<value>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        _value,
        ("access",),
    ),
    Rule(
        "github",
        LazyPattern(r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}+|github_pat_\w{30,}+"),
        anchors=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule(
        "gitlab",
        LazyPattern(r"gl(?:pat|dt|rt|ptt|soat|cbt|oas|ft|imt)-" + _ANY + r"{20,}+"),
        anchors=("gl",),
    ),
    Rule(
        "slack-webhook",
        LazyPattern(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9_/+-]{8,}+)"
        ),
        _value,
        anchors=("hooks.slack.com",),
    ),
    Rule(
        "slack",
        LazyPattern(r"xox[abposre]-[A-Za-z0-9-]{10,}+|xapp-\d-[A-Za-z0-9-]{10,}+"),
        _whole_if_random,
        anchors=("xox", "xapp-"),
    ),
    Rule(
        "stripe",
        LazyPattern(
            r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}+|whsec_\w{20,}+)"
        ),
        anchors=("_live_", "_test_", "whsec_"),
    ),
    Rule("google-api-key", LazyPattern(r"AIza" + _ANY + r"{35,}+"), anchors=("aiza",)),
    Rule(
        "google-oauth",
        LazyPattern(r"ya29\.[A-Za-z0-9_-]{20,}+|GOCSPX-" + _ANY + r"{20,}+"),
        anchors=("ya29.", "gocspx-"),
    ),
    Rule("npm", LazyPattern(r"npm_[A-Za-z0-9]{36,}+"), anchors=("npm_",)),
    Rule("pypi", LazyPattern(r"pypi-AgEIcHlwaS5vcmc" + _ANY + r"{20,}+"), anchors=("pypi-",)),
    Rule(
        "sendgrid",
        LazyPattern(r"SG\." + _ANY + r"{16,}+\." + _ANY + r"{20,}+"),
        anchors=("sg.",),
    ),
    # The lookbehind is what keeps this linear: `eyJ` is made of the characters that follow it,
    # so without it a long run of `eyJeyJ...` would be rescanned from every position.
    Rule(
        "jwt",
        LazyPattern(
            r"eyJ(?:(?<![A-Za-z0-9_-]eyJ)|(?<=\\[nrt]eyJ))"
            + _ANY
            + r"{8,}+\.eyJ"
            + _ANY
            + r"{8,}+\."
            + _ANY
            + "*+"
        ),
        anchors=("eyj",),
    ),
    Rule(
        # The password is redacted; the user and the host are kept.
        "url-password",
        LazyPattern(
            r"://(?<=[A-Za-z0-9]://)[^\s/:@'\"<>]{0,256}+:(?P<value>[^\s/@'\"<>]{1,256}+)@"
        ),
        _url_password,
        anchors=("://",),
    ),
    folding_rule(
        "bearer",
        r"bearer[ \t]++(?P<value>[A-Za-z0-9._~+/=-]{8,}+)",
        _value_if_random,
        ("bearer",),
    ),
    folding_rule(
        "basic-auth",
        r"authorization(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?basic[ \t]++"
        r"(?P<value>[A-Za-z0-9+/]{8,}+={0,2})",
        _value,
        ("basic",),
    ),
    folding_rule(
        "password",
        r"-(?:(?<![A-Za-z0-9-]-)|(?<=\\[nrt]-))-?[a-z-]{0,30}(?:password|passwd)[ \t]++"
        r"(?P<value>[^\s\"'-][^\s\"']*+)",
        _flag_value,
        ("passw",),
    ),
    folding_rule(
        "secret",
        r"-(?:(?<![A-Za-z0-9-]-)|(?<=\\[nrt]-))-?[a-z-]{0,30}(?:token|secret|api-key)[ \t]++"
        r"(?P<value>[^\s\"'-][^\s\"']*+)",
        _flag_value,
        ("token", "secret", "api-key"),
    ),
    _assignment_rule("password", _LOGIN_KEYWORDS, ("pass", "pwd")),
    _assignment_rule("secret", _CREDENTIAL_KEYWORDS, ("secret", "token", "key", "credential")),
)
