"""Text scrubbers used by `memoryd.sources.clean`: scaffolding, base64 payloads, long outputs.

Each scrubber is a pure function of its input and returns the new text plus how many bytes
(UTF-8) it removed, so cleaning can report what it dropped without logging any content.

Invariants:
- scaffolding is recognised by exact tag names only: an element is removed when both its
  opening and closing tags are present, so prose that mentions `<thinking>` once survives;
- scanning is linear: each closing tag is searched once per opening tag found after the previous
  element, and a tag name known to have no closing tag is not searched again;
- an excerpt never splits a marker (`[REDACTED:...]`, `[base64 dropped: ...]`) and its length,
  marker included, never exceeds the limit, so cutting an excerpt again changes nothing.
"""

from __future__ import annotations

import re

# Wrappers the agents' harnesses inject around or between the dialogue (transcript-formats.md
# §1 "Getting the plain dialogue", §3 Codex scaffolding): dropped with their content.
SCAFFOLDING_ELEMENTS = (
    "thinking",
    "system-reminder",
    "environment_context",
    "user_instructions",
    "permissions",
    "INSTRUCTIONS",
    "local-command-caveat",
    "local-command-stdout",
    "local-command-stderr",
    "command-message",
    "task-notification",
)
# Slash-command markup whose content is what the user typed (`/orchestrator` and its
# arguments): the tags go, the words stay.
UNWRAPPED_ELEMENTS = ("command-name", "command-args")

_OPENING = re.compile(
    r"<(" + "|".join(map(re.escape, SCAFFOLDING_ELEMENTS)) + r")(?:[ \t][^<>\n]{0,200})?>"
)
_UNWRAPPED_TAG = re.compile(r"</?(?:" + "|".join(map(re.escape, UNWRAPPED_ELEMENTS)) + r")>")
# Harness notices that are not dialogue (Claude Code interruptions, OpenClaw reply tags).
_NOTICES = re.compile(
    r"\[Request interrupted by user(?: for tool use)?\]|\[\[reply_to(?:_current|:[^\]\n]{1,80})\]\]"
)


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _strip_once(text: str) -> str:
    pieces: list[str] = []
    position = search_from = 0
    unclosed: set[str] = set()
    while opening := _OPENING.search(text, search_from):
        name = opening.group(1)
        closing_tag = f"</{name}>"
        closing = -1 if name in unclosed else text.find(closing_tag, opening.end())
        if closing < 0:
            unclosed.add(name)
            search_from = opening.end()
            continue
        pieces.append(text[position : opening.start()])
        position = search_from = closing + len(closing_tag)
    pieces.append(text[position:])
    return _NOTICES.sub("", _UNWRAPPED_TAG.sub("", "".join(pieces)))


def strip_scaffolding(text: str) -> tuple[str, int]:
    """Given a text, return it without harness scaffolding, and the bytes removed."""
    if "<" not in text and "[" not in text:
        return text, 0
    original = text
    # Removing one element can join the halves of another around it; repeat until stable
    # (each round shrinks the text, so this ends) so that stripping twice changes nothing.
    while (stripped := _strip_once(text)) != text:
        text = stripped
    return text, _utf8_size(original) - _utf8_size(text)


_DATA_URI = re.compile(
    r"data:[A-Za-z0-9.+/-]{0,100}(?:;[A-Za-z0-9.+=-]{1,100}){0,8};base64,[A-Za-z0-9+/=_-]*+"
)
# A run of base64 characters, possibly wrapped in lines (MIME wraps at 76) by real newlines or
# the two-character `\n` of a JSON string. The lookbehind starts a run only at its first
# character, which keeps the scan linear.
_B64 = r"[A-Za-z0-9+/_-]"
_BASE64_RUN = re.compile(
    r"(?<![A-Za-z0-9+/_-])"
    + _B64
    + r"{16,}+={0,2}(?:(?:\r?\n|(?:\\r)?\\n)"
    + _B64
    + r"{16,}+={0,2})*+"
)
BASE64_MIN_CHARS = 256
_MIXED = (re.compile(r"[A-Z]"), re.compile(r"[a-z]"), re.compile(r"[0-9]"))


def _size_label(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{round(size / (1024 * 1024))} MB"


def base64_marker(size: int) -> str:
    """Return the text that replaces a dropped base64 payload of `size` bytes."""
    return f"[base64 dropped: {_size_label(size)}]"


def _is_payload(run: str, min_chars: int) -> bool:
    # Long runs of one case or without digits are hex ids, paths or ruler lines; encoded binary
    # mixes upper case, lower case and digits.
    return len(run) >= min_chars and all(kind.search(run) for kind in _MIXED)


def drop_base64(text: str, min_chars: int = BASE64_MIN_CHARS) -> tuple[str, int]:
    """Given a text, return it with data: URIs and long base64 runs replaced by a short marker,
    and the bytes dropped. Runs shorter than `min_chars` are kept (hashes, ids, short tokens).
    """
    dropped = 0

    def replace_uri(found: re.Match[str]) -> str:
        nonlocal dropped
        dropped += len(found.group())
        return base64_marker(len(found.group()))

    def replace_run(found: re.Match[str]) -> str:
        nonlocal dropped
        run = found.group()
        if not _is_payload(run, min_chars):
            return run
        dropped += len(run)
        return base64_marker(len(run))

    if "data:" in text:
        text = _DATA_URI.sub(replace_uri, text)
    if len(text) >= min_chars:
        text = _BASE64_RUN.sub(replace_run, text)
    return text, dropped


_MARKERS = re.compile(r"\[(?:REDACTED:[a-z0-9-]{1,40}|base64 dropped: \d+ [KM]?B)\]")
_MARKER_REACH = 64  # longer than any marker, so a window this wide around a cut sees it whole


def _outside_markers(text: str, position: int, *, backwards: bool) -> int:
    """Move `position` off any marker it falls inside: to the marker's start or end."""
    window = _MARKERS.finditer(text, max(0, position - _MARKER_REACH), position + _MARKER_REACH)
    for found in window:
        if found.start() < position < found.end():
            return found.start() if backwards else found.end()
    return position


def cut_marker(chars: int) -> str:
    """Return the text that stands for `chars` characters cut out of a long output."""
    return f"\n[… {chars} chars cut …]\n"


_LINE_REACH = 200  # how far a cut may move to fall on a line break
_WORD_REACH = 40  # failing that, how far to fall on a space


def _head_end(text: str, position: int) -> int:
    line = text.rfind("\n", max(0, position - _LINE_REACH), position)
    if line < 0:
        line = text.rfind(" ", max(0, position - _WORD_REACH), position)
    position = line if line > 0 else position
    return _outside_markers(text, position, backwards=True)


def _tail_start(text: str, position: int) -> int:
    line = text.find("\n", position, position + _LINE_REACH)
    if line < 0:
        line = text.find(" ", position, position + _WORD_REACH)
    position = line + 1 if line >= 0 else position
    return _outside_markers(text, position, backwards=False)


def excerpt(text: str, limit: int) -> tuple[str, int]:
    """Given a text and a size limit, return a head-and-tail excerpt of at most `limit`
    characters (marker included) and the bytes cut. A text within the limit is returned whole;
    a limit too small to hold the marker keeps only the head (without a marker).

    The cuts fall on line breaks (or spaces) near the ideal positions when there are any, so
    the excerpt shows whole lines, and never inside a marker.
    """
    if len(text) <= limit:
        return text, 0
    budget = limit - len(cut_marker(len(text)))  # the marker is longest for the largest cut
    if budget < 2:
        head = text[: _outside_markers(text, limit, backwards=True)].rstrip()
        return head, _utf8_size(text[len(head) :])
    head = text[: _head_end(text, (budget + 1) // 2)].rstrip()
    tail = text[_tail_start(text, len(text) - budget // 2) :].lstrip()
    cut = text[len(head) : len(text) - len(tail)]
    marker = cut_marker(len(cut))
    # The marker's line breaks separate it from the head and the tail; with nothing on one
    # side, the break would be stray whitespace at an end of the text.
    marker = marker if head else marker.lstrip("\n")
    marker = marker if tail else marker.rstrip("\n")
    return head + marker + tail, _utf8_size(cut)
