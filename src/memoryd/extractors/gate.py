"""The safety gate for skills and tacit knowledge.

Skills files and the tacit file are read by agents at the start of every run and followed as
advice, so a tip planted there (by a prompt injection in a web page or a tool's output that the
model took for a lesson) outlives the conversation that planted it. Before a tip or a tacit line
is filed, the gate

1. finds its provenance (`support`): the turns of the chunk whose words carry at least half of
   the tip's content words, and whose text they were: the user's, the agent's, or untrusted
   tool output (cleaning marks every turn that is not user or assistant as untrusted);
2. holds it for review instead of filing it when it would change security posture or run remote
   code (`dangerous_reasons`: the classes of `memoryd.store.danger`), or when it rests only on
   untrusted tool output (reason `untrusted-source`).

A held item goes to the review queue in the store (`memoryd.store.review`), counted by
`memoryd status` and listed by `memoryd review`; `memoryd review accept ID` files it and
`reject ID` records that it never will be. A tip the operator rejected before is not held again
(its new source is only added to the record); one accepted before is filed.

What the gate cannot catch is said in docs/operators-guide.md ("The safety gate"): the rules
are patterns over the tip's words, so a dangerous tip in words none of them knows (a paraphrase,
another language, an innocuous-looking command whose danger is in its arguments or in the
script it fetches) is filed, and the trust of a tip is estimated from word overlap, so a tip the
model phrased far from every turn counts as the agent's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from memoryd.extractors.chunking import Chunk
from memoryd.logs import get_logger
from memoryd.sources.model import Turn
from memoryd.store.danger import dangerous_reasons
from memoryd.store.markdown import bullet_text
from memoryd.store.provenance import TipSource, Trust, record_provenance
from memoryd.store.review import ItemKind, ReviewItem, hold, read_item, review_id
from memoryd.store.skills import add_routine_skill, add_skill
from memoryd.store.tacit import add_tacit, clean_statement
from memoryd.store.text import normalize_statement, words
from memoryd.worktree import FileTransaction

log = get_logger(__name__)

UNTRUSTED_SOURCE: Final = "untrusted-source"

# Words too common to tell one turn from another.
_COMMON: Final = frozenset(
    {
        *("the", "and", "for", "with", "that", "this", "from", "into", "when", "then", "than"),
        *("you", "your", "use", "uses", "using", "run", "runs", "its", "are", "was", "were"),
        *("has", "have", "had", "not", "but", "can", "will", "should", "must", "always"),
        *("never", "before", "after"),
    }
)
_SUPPORT_SHARE: Final = 0.5


def content_words(text: str) -> set[str]:
    """The words of `text` that can tell where a tip came from (no short or common words)."""
    return {word for word in words(text) if len(word) >= 3 and word not in _COMMON}


def _trust(turn: Turn) -> Trust:
    if turn.trusted and turn.role == "user":
        return "user"
    if turn.trusted and turn.role == "assistant":
        return "agent"
    return "untrusted"


def support(chunk: Chunk, text: str) -> TipSource:
    """Given a chunk and a tip it produced, return the tip's provenance: the turns whose words
    carry at least half of the tip's content words (the best-matching turns when none does),
    their line range, and the most trusted of their voices. A tip no turn shares a word with is
    the agent's own conclusion."""
    wanted = content_words(text)
    scored = [(len(wanted & content_words(turn.text)), turn) for turn in chunk.turns]
    best = max((score for score, _ in scored), default=0)
    if not wanted or best == 0:
        backing: list[Turn] = []
    else:
        needed = min(best, max(1, round(len(wanted) * _SUPPORT_SHARE)))
        backing = [turn for score, turn in scored if score >= needed]
    first = chunk.turns[0].provenance
    if backing:
        trust: Trust = min((_trust(turn) for turn in backing), key=_TRUST_ORDER.index)
        lines = (
            min(turn.provenance.lines[0] for turn in backing),
            max(turn.provenance.lines[1] for turn in backing),
        )
        where = backing[0].provenance
    else:
        trust, lines, where = "agent", chunk.line_range, first
    return TipSource(
        agent=chunk.agent,
        session=chunk.session_id,
        file=where.file,
        lines=lines,
        trust=trust,
        day=chunk.day.isoformat(),
        locator=where.locator,
    )


_TRUST_ORDER: Final[Sequence[Trust]] = ("user", "agent", "untrusted")

Outcome = Literal["filed", "duplicate", "held", "refused"]


@dataclass(frozen=True)
class Tip:
    """A skill tip or tacit line about to be filed."""

    kind: ItemKind
    agent: str
    text: str
    topic: str | None = None
    routine: str | None = None

    @property
    def id(self) -> str:
        return review_id(self.kind, self.agent, self.routine, self.topic, self.text)


class HeldTips:
    """The items one heartbeat held, each logged once by `log_held` (`gate.held`, with the number
    of `proposals` that asked for it), however many chunks proposed it."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[dict[str, Any], int]] = {}

    def add(self, fields: dict[str, Any]) -> None:
        """Count one proposal of the held item `fields` describes (the first one's fields stay)."""
        first, proposals = self._held.get(fields["review_id"], (fields, 0))
        self._held[fields["review_id"]] = (first, proposals + 1)

    def __contains__(self, review_id: object) -> bool:
        """Whether the item with this review id was held since the last `log_held`."""
        return review_id in self._held

    def log_held(self) -> None:
        """Log `gate.held` once per item held since the last call, and forget them."""
        for fields, proposals in self._held.values():
            log.warning("gate.held", **fields, proposals=proposals)
        self._held.clear()


def file_tip(
    tx: FileTransaction,
    tip: Tip,
    source: TipSource,
    *,
    skills_dir: str,
    tacit_file: str,
    today: str,
    held: HeldTips | None = None,
) -> Outcome:
    """File `tip` with its provenance, or hold it for review (see the module docstring). A held
    tip is counted in `held`, which logs it later, or without `held` logged at once."""
    previous = read_item(tx, tip.id)
    reasons = dangerous_reasons(" ".join(filter(None, (tip.topic, tip.text))))
    if source.trust == "untrusted":
        reasons = (*reasons, UNTRUSTED_SOURCE)
    accepted = previous is not None and previous.status == "accepted"
    if previous is not None and previous.status == "rejected":
        hold(tx, _item(tip, reasons, source, today))
        log.info("gate.rejected_again", review_id=tip.id, agent=tip.agent, kind=tip.kind)
        return "refused"
    if reasons and not accepted:
        item = hold(tx, _item(tip, reasons, source, today))
        fields = {
            "review_id": item.id,
            "agent": tip.agent,
            "kind": tip.kind,
            "reasons": list(item.reasons),
            "trust": source.trust,
            "session": source.session,
        }
        if held is None:
            log.warning("gate.held", **fields, proposals=1)
        else:
            held.add(fields)
        return "held"
    added = file_now(tx, tip, (source,), skills_dir=skills_dir, tacit_file=tacit_file)
    return "filed" if added else "duplicate"


def _item(tip: Tip, reasons: tuple[str, ...], source: TipSource, today: str) -> ReviewItem:
    return ReviewItem(
        kind=tip.kind,
        agent=tip.agent,
        text=tip.text,
        reasons=reasons,
        held=today,
        topic=tip.topic,
        routine=tip.routine,
        sources=(source,),
    )


def file_now(
    tx: FileTransaction,
    tip: Tip,
    sources: Sequence[TipSource],
    *,
    skills_dir: str,
    tacit_file: str,
) -> bool:
    """File `tip` into the agent's files and record its sources; return whether it was new.
    Raise InvalidSkillError for a tip or topic without any letter or digit."""
    if tip.kind == "tacit":
        added = bool(add_tacit(tx, tacit_file, [tip.text]))
        path, text = tacit_file, clean_statement(tip.text)
    elif tip.kind == "routine-skill" and tip.routine:
        outcome = add_routine_skill(
            tx,
            skills_dir,
            agent=tip.agent,
            routine=tip.routine,
            topic=tip.topic or "",
            tip=tip.text,
        )
        added, path, text = outcome.added, outcome.path, outcome.tip
    else:
        outcome = add_skill(tx, skills_dir, agent=tip.agent, topic=tip.topic or "", tip=tip.text)
        added, path, text = outcome.added, outcome.path, outcome.tip
    if not added:
        text = _as_filed(tx, path, text)
    for source in sources:
        record_provenance(tx, path, text, source)
    return added


def _as_filed(tx: FileTransaction, path: str, text: str) -> str:
    """The bullet of `path` that `text` duplicates (its provenance is recorded under it), or
    `text` when none does."""
    key = normalize_statement(text)
    for line in (tx.read_text(path) or "").splitlines():
        bullet = bullet_text(line)
        if bullet is not None and normalize_statement(bullet) == key:
            return bullet
    return text
