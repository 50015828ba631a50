"""`summary.md`: the request to `write_summary`, the validation of its answer, and the template.

The file is `# <entity name>`, a blank line, then the body, then a newline. memoryd writes the
heading itself; the body comes from the model or from the deterministic template.

A model's summary is accepted only when (`validate_summary`):

- after dropping trailing spaces, leading/trailing blank lines and one leading `# ` title line
  (memoryd writes its own), the body is non-empty and at most `MAX_LINES` lines and
  `MAX_CHARS` characters;
- every line is blank, a subheading (`## ` to `###### `, at most `MAX_HEADING_CHARS`
  characters, citing nothing), or a content line that carries at least one citation and some
  words outside its citations;
- a citation is a bracketed, comma-separated list of fact ids, `[jane-doe-004]` or
  `[jane-doe-004, jane-doe-007]`, and every id cited anywhere is one the request gave (a hot or
  warm fact of this entity; cold facts are never given, so they can never be cited);
- no second `# ` title;
- hot facts come first (docs/store-format.md, Decay and summaries): no content line resting only on
warm facts comes before a
  line citing a hot one. A flat summary (no subheadings) in the wrong order is put in order
  (hot lines first, each group in the model's order); one with subheadings is refused, and the
  correction asks again.

Anything else raises InvalidSummaryError, and the caller keeps the previous summary. The
template (`render_template`) lists the given facts themselves, hot under "Recent" then warm
under "Background", one cited line each, so it always passes the same validation. Everything
here is pure: the same input gives the same bytes.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from memoryd.errors import MemorydError
from memoryd.llm.base import ToolRequest, ToolSpec
from memoryd.llm.schema import tool_input_schema
from memoryd.prompts import load_prompt
from memoryd.store.summaries import CITATION, CITED_ID, SummaryFact, SummaryInput
from memoryd.store.text import one_line, words

SUMMARY_TOOL: Final = "write_summary"
MAX_LINES: Final = 60
MAX_CHARS: Final = 6000
MAX_HEADING_CHARS: Final = 100
MAX_OUTPUT_TOKENS: Final = 2000

_SUBHEADING = re.compile(r"^#{2,6}\s+\S")
_TITLE = re.compile(r"^#\s+\S")


class InvalidSummaryError(MemorydError):
    """A summary answer breaks the rules of the module docstring; the old summary stays."""

    def __init__(self, reason: str, raw: str = "") -> None:
        self.reason = reason
        self.raw = raw[:2000]
        super().__init__(f"invalid summary: {reason}")


class WriteSummary(BaseModel):
    """The input of the `write_summary` tool."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1,
        description="The summary in Markdown, without a '# ' title. Every line that is not "
        "blank or a '## ' subheading ends with the ids of the facts it rests on, in brackets.",
    )


def write_summary_tool() -> ToolSpec:
    return ToolSpec(
        name=SUMMARY_TOOL,
        description="Record the summary of the entity, every content line citing fact ids.",
        input_schema=tool_input_schema(WriteSummary),
    )


def prompt_refs() -> tuple[str, str]:
    return (load_prompt("summary-system").ref, load_prompt("summary-user").ref)


def _fact_line(fact: SummaryFact) -> str:
    return f"[{fact.id}] {one_line(fact.text)} ({fact.category}, since {fact.timestamp})"


def fence_marker(content: str) -> str:
    """A delimiter marker derived from the content (so requests are byte-stable) that the
    content does not contain, so no fact can close the fence early."""
    salt = 0
    while True:
        digest = hashlib.sha256(f"{salt}\n{content}".encode()).hexdigest()[:16].upper()
        marker = f"MEMORYD-{digest}"
        if marker not in content:
            return marker
        salt += 1


def build_request(
    summary_input: SummaryInput, *, model: str, today: str, correction: str = ""
) -> ToolRequest:
    """The `write_summary` request for an entity: hot facts, then warm; never cold ones."""
    hot = "\n".join(map(_fact_line, summary_input.tier_facts("hot"))) or "(none)"
    warm = "\n".join(map(_fact_line, summary_input.tier_facts("warm"))) or "(none)"
    entity = summary_input.entity
    user = load_prompt("summary-user").render(
        name=one_line(entity.name),
        ref=entity.ref,
        today=today,
        hot_facts=hot,
        warm_facts=warm,
        nonce=fence_marker(entity.name + hot + warm),
    )
    if correction:
        user += "\n\n" + correction
    return ToolRequest(
        model=model,
        system=load_prompt("summary-system").text,
        tool=write_summary_tool(),
        user_content=user,
        max_tokens=MAX_OUTPUT_TOKENS,
    )


def correction_for(error: InvalidSummaryError) -> str:
    return (
        f"Your previous summary could not be used: {error.reason}. Call {SUMMARY_TOOL} again; "
        "cite only the ids listed above, on every line that is not blank or a subheading."
    )


def summary_from_tool_input(tool_input: dict[str, object] | None) -> str:
    """The summary text of a tool answer. Raise InvalidSummaryError when there is none."""
    if tool_input is None:
        raise InvalidSummaryError(f"no {SUMMARY_TOOL} call in the answer")
    text = tool_input.get("summary")
    if not isinstance(text, str):
        raise InvalidSummaryError("'summary' must be a string", repr(tool_input))
    return text


def validate_summary(
    text: str, given_ids: frozenset[str], hot_ids: frozenset[str] = frozenset()
) -> str:
    """The cleaned body of a model's summary, hot lines first. Raise InvalidSummaryError
    (module docstring)."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    if lines and _TITLE.match(lines[0]):
        lines.pop(0)
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    body = "\n".join(lines)
    if not any(line and not _SUBHEADING.match(line) for line in lines):
        raise InvalidSummaryError("the summary is empty", text)
    if len(lines) > MAX_LINES or len(body) > MAX_CHARS:
        raise InvalidSummaryError(
            f"too long ({len(lines)} lines, {len(body)} characters; at most {MAX_LINES} lines "
            f"and {MAX_CHARS} characters)",
            text,
        )
    for number, line in enumerate(lines, start=1):
        _check_line(number, line, given_ids, text)
    return "\n".join(_hot_first(lines, hot_ids, text))


def _cites_hot(line: str, hot_ids: frozenset[str]) -> bool:
    return any(cited in hot_ids for cited in CITED_ID.findall(" ".join(CITATION.findall(line))))


def _hot_first(lines: list[str], hot_ids: frozenset[str], raw: str) -> list[str]:
    """`lines` with the hot facts first (module docstring); unchanged when already so."""
    content = [line for line in lines if line.strip() and not _SUBHEADING.match(line)]
    ranks = [0 if _cites_hot(line, hot_ids) else 1 for line in content]
    if ranks == sorted(ranks):
        return lines
    if len(content) != len([line for line in lines if line.strip()]):
        raise InvalidSummaryError(
            "a line resting only on warm facts comes before a line citing a hot fact; "
            "hot facts go first",
            raw,
        )
    hot = [line for line, rank in zip(content, ranks, strict=True) if rank == 0]
    return hot + [line for line, rank in zip(content, ranks, strict=True) if rank == 1]


def _check_line(number: int, line: str, given_ids: frozenset[str], raw: str) -> None:
    if not line.strip():
        return
    if _TITLE.match(line):
        raise InvalidSummaryError(f"line {number} is a second '# ' title", raw)
    if _SUBHEADING.match(line):
        if len(line) > MAX_HEADING_CHARS or CITATION.search(line):
            raise InvalidSummaryError(
                f"line {number}: a subheading is short and cites nothing", raw
            )
        return
    citations = CITATION.findall(line)
    if not citations:
        raise InvalidSummaryError(f"line {number} cites no fact: {line[:120]!r}", raw)
    for citation in citations:
        for part in re.split(r"[,;]", citation):
            cited = part.strip()
            if not CITED_ID.fullmatch(cited):
                raise InvalidSummaryError(f"line {number}: {cited!r} is not a fact id", raw)
            if cited not in given_ids:
                raise InvalidSummaryError(
                    f"line {number} cites {cited}, which is not one of the facts given", raw
                )
    if not words(CITATION.sub(" ", line)):
        raise InvalidSummaryError(f"line {number} has citations but no text", raw)
