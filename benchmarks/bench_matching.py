"""Entity matching benchmark: which known entities an extraction request offers for an excerpt,
against a hand-labelled set of excerpt/entity pairs a person would agree with.

A pair is labelled `True` when the excerpt mentions the entity (by name or alias) in prose, and
`False` when the label only appears inside a path, an identifier, a URL, an e-mail address or a
longer word, or when the excerpt names a different person with a similar name. An entity counts
as offered when the request's known-entities block has a header line for it that does not say
it is a different entity (`build_context`, as the heartbeat calls it). The benchmark prints the
precision and recall of "offered" against the labels, and lists each pair it gets wrong.

The store is real (`memoryd init`'s code) and written under `$TMPDIR/memoryd-bench/matching/`,
outside any work tree, rebuilt on each run.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from memoryd.extractors.apply import StoreSession
from memoryd.extractors.chunking import Chunk
from memoryd.extractors.context import build_context
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.sources.model import Provenance, Turn
from memoryd.store.layout import init_store
from memoryd.worktree import UnitOfWork

DATA = Path(tempfile.gettempdir()) / "memoryd-bench" / "matching"
WHEN = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
TODAY = date(2026, 3, 10)

# (name, kind, aliases)
ENTITIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Dev Patel", "person", ("Dev",)),
    ("Jane Doe", "person", ()),
    ("Acme", "company", ()),
    ("Ana-María López", "person", ("Ana",)),
    ("Søren Kierkegaard", "person", ()),
    ("Project Atlas", "project", ("Atlas",)),
    ("Al Smith", "person", ("Al",)),
    ("Mark Chen", "person", ("Mark",)),
    ("Bo", "person", ()),
    ("Jean-Luc Picard", "person", ()),
)

# (excerpt, entity name, mentioned?)
PAIRS: tuple[tuple[str, str, bool], ...] = (
    # "Dev" — a short alias that is also a common word and a path component
    ("Mount /dev/sda1 before the backup runs.", "Dev Patel", False),
    ("The disk is /dev/nvme0n1p2 on this box.", "Dev Patel", False),
    ("Deploy to dev-server first, then prod.", "Dev Patel", False),
    ("Set dev_server = true in the config.", "Dev Patel", False),
    ("Our DevOps team owns the pipeline.", "Dev Patel", False),
    ("Devon will review the PR tomorrow.", "Dev Patel", False),
    ("See https://dev.example.com/docs for the API.", "Dev Patel", False),
    ("Mail dev@example.com if the build breaks.", "Dev Patel", False),
    ("Run it in dev before staging.", "Dev Patel", False),
    ("This is only a dev build, not a release.", "Dev Patel", False),
    ("npm install --save-dev typescript", "Dev Patel", False),
    ("The DEV environment is down again.", "Dev Patel", False),
    ("Dev builds are slow today.", "Dev Patel", False),
    ("Dev Patel approved the budget.", "Dev Patel", True),
    ("I met Dev yesterday at the office.", "Dev Patel", True),
    ("Dev's review was thorough.", "Dev Patel", True),
    ("Dev said the migration is done.", "Dev Patel", True),
    ("Ask Dev about the on-call rota.", "Dev Patel", True),
    ("Thanks, Dev!", "Dev Patel", True),
    ("Lunch with dev patel on Friday.", "Dev Patel", True),
    # Jane Doe versus look-alikes
    ("Jane Doerr joined the data team.", "Jane Doe", False),
    ("Jane Doer sent the invoice.", "Jane Doe", False),
    ("Janet Doe called about the lease.", "Jane Doe", False),
    ("Write to jane.doe@example.com for access.", "Jane Doe", False),
    ("The profile is at https://example.com/jane-doe now.", "Jane Doe", False),
    ("The file lives in /home/jane/doe/notes.txt.", "Jane Doe", False),
    ("Jane Doe approved the plan.", "Jane Doe", True),
    ("I spoke with Jane Doe's assistant.", "Jane Doe", True),
    ("Met Jane  Doe\nfor coffee.", "Jane Doe", True),
    ("JANE DOE signed the contract.", "Jane Doe", True),
    ("(Jane Doe) will present.", "Jane Doe", True),
    # a company name
    ("Acme renewed the contract.", "Acme", True),
    ("We ship to ACME, Globex and Initech.", "Acme", True),
    ("acme's new CFO starts Monday.", "Acme", True),
    ("Import acme_client from the SDK.", "Acme", False),
    ("Open https://acme.io/pricing for the tiers.", "Acme", False),
    ("Forward it to billing@acme.com please.", "Acme", False),
    ("The AcmeCorp account is separate.", "Acme", False),
    ("Run acme-cli sync nightly.", "Acme", False),
    ("Look in src/acme/models.py for it.", "Acme", False),
    # hyphenated and non-ASCII names
    ("Ana-María López leads the audit.", "Ana-María López", True),
    ("Ana-Maria Lopez leads the audit.", "Ana-María López", True),
    ("Ana said the audit is late.", "Ana-María López", True),
    ("The analysis by Anabel is due.", "Ana-María López", False),
    ("Call Ana-Sofia about the venue.", "Ana-María López", False),
    ("Søren Kierkegaard wrote that.", "Søren Kierkegaard", True),
    ("Soren Kierkegaard wrote that.", "Søren Kierkegaard", True),
    ("Jean-Luc Picard took command.", "Jean-Luc Picard", True),
    ("Picard's ship is the jean-luc-picard template.", "Jean-Luc Picard", False),
    # project alias
    ("Atlas ships on Monday.", "Project Atlas", True),
    ("Status of Project Atlas: green.", "Project Atlas", True),
    ("We used atlas.js for the map.", "Project Atlas", False),
    ("The MongoDB atlas cluster is slow.", "Project Atlas", False),
    ("Run atlas-migrate before deploy.", "Project Atlas", False),
    # very short names
    ("Al Smith called.", "Al Smith", True),
    ("Al agreed to the plan.", "Al Smith", True),
    ("Alice and Alan went home.", "Al Smith", False),
    ("The al_dente flag is set.", "Al Smith", False),
    ("Bo will join later.", "Bo", True),
    ("The bonus is paid in May.", "Bo", False),
    ("Check the box labelled bo/x2.", "Bo", False),
    # common word aliases
    ("Mark joined the call late.", "Mark Chen", True),
    ("Please mark the ticket as done.", "Mark Chen", False),
    ("Add a bookmark for the page.", "Mark Chen", False),
    ("The Mark Chen report is out.", "Mark Chen", True),
    ("Mark Chenowith sent the file.", "Mark Chen", False),
)


def _chunk(text: str) -> Chunk:
    turn = Turn(
        role="user",
        text=text,
        timestamp=WHEN,
        provenance=Provenance(file="/logs/bench.jsonl", lines=(1, 1)),
        trusted=True,
    )
    return Chunk(
        agent="ops",
        session_id="bench",
        source_format="jsonl",
        routine=None,
        day=WHEN.date(),
        part=0,
        turns=(turn,),
        zone=ZoneInfo("UTC"),
    )


def offered(known_entities: str, ref: str) -> bool:
    """Whether the block offers `ref` as mentioned (a header not saying it is another entity)."""
    return any(
        line.startswith(f"{ref}:") and "not the same" not in line
        for line in known_entities.splitlines()
    )


def measure(root: Path) -> tuple[int, int, int, list[str]]:
    """Return (true positives, false positives, false negatives, the wrong pairs)."""
    if root.exists():
        shutil.rmtree(root)
    store = root / "store"
    init_store(store, "MEMORY.md", "agents", "memoryd", "memoryd@localhost")
    git = GitStore(store, GitIdentity("memoryd", "memoryd@localhost"), None)
    session = StoreSession.open(
        UnitOfWork(git), skills_dir="agents", tacit_file="MEMORY.md", today=TODAY
    )
    refs = {}
    for name, kind, aliases in ENTITIES:
        refs[name] = session.catalog.create(name, kind, aliases, today=TODAY).ref
    true_pos = false_pos = false_neg = 0
    wrong = []
    for text, name, expected in PAIRS:
        context = build_context(
            _chunk(text),
            tx=session.tx,
            catalog=session.catalog,
            facts=session.facts,
            max_facts=10,
            skills_index_path="agents/ops/skills-index.md",
        )
        got = offered(context.known_entities, refs[name])
        if got and expected:
            true_pos += 1
        elif got:
            false_pos += 1
        elif expected:
            false_neg += 1
        if got != expected:
            wrong.append(f"  {'offered' if got else 'missed '} {name!r} for {text!r}")
    return true_pos, false_pos, false_neg, wrong


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_matching", description=__doc__)
    parser.add_argument("--quiet", action="store_true", help="do not list the wrong pairs")
    args, _ = parser.parse_known_args(argv)
    true_pos, false_pos, _missed, wrong = measure(DATA)
    positives = sum(1 for _, _, expected in PAIRS if expected)
    precision = true_pos / (true_pos + false_pos) if true_pos + false_pos else 1.0
    recall = true_pos / positives if positives else 1.0
    print(
        f"pairs: {len(PAIRS)} ({positives} mentions, {len(PAIRS) - positives} non-mentions)\n"
        f"precision: {precision:.3f} ({true_pos} of {true_pos + false_pos} offered)\n"
        f"recall:    {recall:.3f} ({true_pos} of {positives} mentions)"
    )
    if wrong and not args.quiet:
        print("wrong:\n" + "\n".join(wrong))
    return 0
