"""Characters that must not reach what agents read, and names that only look alike.

`strip_unsafe` removes from a text what a terminal or an editor acts on or hides instead of
showing: terminal escape sequences (`ESC [ 31 m`, OSC titles), the other C0 and C1 control
characters except tab, line feed and carriage return, DEL, the bidirectional controls (U+202A-
U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) that reorder what is displayed (a "right-to-left
override" makes `exe.txt` read as `txt.exe`), and the zero-width and invisible format characters
(U+200B-U+200D, U+2060-U+2064, U+FEFF, U+180E, U+00AD) that make two equal-looking texts differ.
Documented consequence: an emoji built with a zero-width joiner comes out as its parts.

`skeleton` is a TR39-style confusable skeleton for comparing names: NFKC, case folding, the
invisible characters above removed, accents stripped, and the common Cyrillic and Greek letters
that look like Latin ones mapped to them (a small table, `_CONFUSABLES`, not the full Unicode
confusables file: it covers the look-alikes of the Latin alphabet, which is what an entity
name in `life/index.md` is read against). Two names with the same skeleton look the same.

Both functions are pure and total, and idempotent: applying one twice changes nothing more.
"""

from __future__ import annotations

import re
import unicodedata

_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]{0,32}[ -/]{0,8}[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks
    r"|\x1b[@-Z\\-_]"  # two-character escapes
)
_INVISIBLE = (
    "\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
_CONTROLS = "".join(chr(c) for c in range(0x20) if chr(c) not in "\t\n\r") + "\x7f"
_C1 = "".join(chr(c) for c in range(0x80, 0xA0))
_UNSAFE = re.compile("[" + re.escape(_INVISIBLE + _CONTROLS + _C1) + "]")


def strip_unsafe(text: str) -> str:
    """Given a text, return it without escape sequences, control characters (tab and line ends
    kept), bidirectional controls and invisible characters."""
    if text.isprintable() or not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub("", _ESCAPE_SEQUENCE.sub("", text))


# Cyrillic and Greek letters (after case folding) that look like a Latin letter or digit.
_CONFUSABLES = str.maketrans(
    {
        "\u0430": "a",  # cyrillic small letter a
        "\u0432": "b",  # cyrillic small letter ve
        "\u0441": "c",  # cyrillic small letter es
        "\u0501": "d",  # cyrillic small letter komi de
        "\u0435": "e",  # cyrillic small letter ie
        "\u0451": "e",  # cyrillic small letter io
        "\u04bb": "h",  # cyrillic small letter shha
        "\u0456": "i",  # cyrillic small letter byelorussian-ukrainian i
        "\u0457": "i",  # cyrillic small letter yi
        "\u0458": "j",  # cyrillic small letter je
        "\u043a": "k",  # cyrillic small letter ka
        "\u04cf": "l",  # cyrillic small letter palochka
        "\u043c": "m",  # cyrillic small letter em
        "\u043d": "h",  # cyrillic small letter en
        "\u043e": "o",  # cyrillic small letter o
        "\u0440": "p",  # cyrillic small letter er
        "\u051b": "q",  # cyrillic small letter qa
        "\u0455": "s",  # cyrillic small letter dze
        "\u0442": "t",  # cyrillic small letter te
        "\u0443": "y",  # cyrillic small letter u
        "\u04af": "y",  # cyrillic small letter straight u
        "\u0445": "x",  # cyrillic small letter ha
        "\u051d": "w",  # cyrillic small letter we
        "\u0261": "g",  # latin small letter script g
        "\u03b1": "a",  # greek small letter alpha
        "\u03b2": "b",  # greek small letter beta
        "\u03b5": "e",  # greek small letter epsilon
        "\u03b7": "n",  # greek small letter eta
        "\u03b9": "i",  # greek small letter iota
        "\u03ba": "k",  # greek small letter kappa
        "\u03bd": "v",  # greek small letter nu
        "\u03bf": "o",  # greek small letter omicron
        "\u03c1": "p",  # greek small letter rho
        "\u03c4": "t",  # greek small letter tau
        "\u03c5": "u",  # greek small letter upsilon
        "\u03c7": "x",  # greek small letter chi
        "\u03b6": "z",  # greek small letter zeta
        "\u0131": "i",  # latin small letter dotless i
        "\u2113": "l",  # script small l
    }
)
_MARKS = re.compile(r"[\u0300-\u036f]")


def skeleton(name: str) -> str:
    """Given a name, return the form it is compared in for look-alikes (see the docstring)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = _UNSAFE.sub("", text)
    text = _MARKS.sub("", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", text.translate(_CONFUSABLES))
