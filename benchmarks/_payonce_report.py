"""The `## Pay once` section of BENCHMARKS.md, from the before and after results of
`bench_payonce` (rows matched by corpus and latency, kills by depth)."""

from __future__ import annotations

import os
from typing import Any

CALLS_TARGET = 1.05  # issue 25: paid calls against a sequential run
WALL_TARGET = 1.5  # issue 25: wall time against the API limit

Row = dict[str, Any]


def render(results: dict[str, dict[str, Any]], concurrency: int) -> str:
    before, after = results.get("before"), results.get("after")
    known = after or before
    assert known is not None
    dates = sorted({r.get("date", known["date"]) for r in known["backfill"]})
    lines = [
        f"Run: `python -m benchmarks payonce` on {', '.join(dates)} ({os.cpu_count()} CPUs "
        f"shared with other work; load average {known['load']:.1f} at the end of the last after "
        f"run). `memoryd heartbeat` as a subprocess, `llm.concurrency` = {concurrency}, "
        "`sections_per_call` = 1, the fake Anthropic server answering after the latency over "
        f"loopback through the real SDK. {known['conversations']} short conversations, one chunk "
        "each, in one heartbeat; `shared`: every conversation names one of 4 people and one of 3 "
        "projects all conversations share; `disjoint`: entities of its own; `dense`: the people "
        "and projects of `shared`, each fact one of 4-5 slots of its entity with a value from a "
        "short list (below). Before = the code before issue 25's pay-once work (`--code` of a "
        "checkout of the merge's first parent; for `shared` and `disjoint`, main before that "
        "merge), after = this branch. Calls are counted by the server; wall is the heartbeat's "
        "own `duration_ms`; the limit is chunks x latency / concurrency.",
        "",
        "| corpus, latency | calls vs sequential: before | after | wall vs limit: before | "
        "after | store = sequential (before / after) |",
        "|---|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys(_key(r) for r in [*_rows(after), *_rows(before)]))
    for key in keys:
        old, new = _find(before, key), _find(after, key)
        same = " / ".join("—" if r is None else _same(r) for r in (old, new))
        lines.append(
            f"| {key[0]}, {key[1]} s | {_calls(old)} | {_calls(new)} | {_wall(old)} | "
            f"{_wall(new)} | {same} |"
        )
    lines += [
        "",
        f"Targets (issue 25): calls <= {CALLS_TARGET}x the sequential run, wall <= "
        f"{WALL_TARGET}x the limit. The after runs ask again (`chunk.asked_again`) only where a "
        "fact of the answer shares half its content words with a fact of the same entity filed "
        "since it was asked (and that fact did not replace the one the answer's fact "
        "supersedes), or where the chunk restates a fact its context listed that was replaced "
        "since; everything else is reconciled by code. Each chunk asked again halves the calls "
        "kept in flight, right answers add them back one at a time (`calls.paced`): it never "
        "engages on `shared` and `disjoint` (no chunk is asked again there).",
        "",
        *_dense(before, after),
        f"Kills (`shared` corpus, answers after {known['kill_latency']} s): the heartbeat is "
        "SIGKILLed once `depth` calls reached the server, then a second heartbeat finishes. "
        "Paid again = both runs' calls minus one per chunk minus the finishing run's "
        "`chunk.asked_again`; in flight (by arrival) = calls that reached the server within the "
        "latency before the kill. The after runs also count, from the server's own record, the "
        "calls whose answer was not written whole before the kill (unanswered) and the answers "
        "written in the 25 ms before it (on their way: the SDK had not returned them yet); each "
        "depth is killed in several trials.",
        "",
        "| depth | before: paid again / in flight (by arrival) | after: the same | "
        "after: paid again / unanswered + on their way, per trial |",
        "|---|---|---|---|",
    ]
    depths = dict.fromkeys(k["depth"] for r in (after, before) if r for k in r["kills"])
    for depth in depths:
        lines.append(
            f"| {depth} | {_kill(before, depth)} | {_kill(after, depth)} | "
            f"{_trials(after, depth)} |"
        )
    return "\n".join(lines)


def _dense(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    """What the `dense` rows say: the corpus, the verdict on the targets, what is asked again,
    and where the store differs from the sequential run's."""
    rows = [r for r in _rows(after) if r["corpus"] == "dense"]
    if not rows:
        return []
    held = all(_ratio(r) <= CALLS_TARGET and _wall_ratio(r) <= WALL_TARGET for r in rows)
    lines = [
        "`dense`: a fleet restating and updating the same project status. Each conversation "
        "says one fact of a person (on call for a project this week, works from an office, on "
        "leave until a day, reviews a project's release) and one of a project (release moved to "
        "a day, release freeze moved to a day, staging cluster green/red/frozen, release owner, "
        "billing migration percent done); one line in five says again the value that stands. "
        "Two values of one slot share two of their three or four content words, and the "
        "release date and the release freeze date share two, so facts of one entity often "
        "overlap by half or more. The fake model answers as a strong model given the context "
        "would: it supersedes every fact of the same entity and slot the context shows, and "
        "leaves out a line the context shows word for word.",
        "",
        f"On `dense` the targets {'hold' if held else 'do not hold'}: "
        + "; ".join(
            f"{r['latency']} s: calls {_ratio(r):.2f}x, wall {_wall_ratio(r):.2f}x, store "
            + ("= sequential" if r["same_store"] else "differs")
            for r in rows
        )
        + ". The calls asked again (`chunk.asked_again`), by what the store had filed between "
        "the chunk's first call and its turn, for the chunk's own lines (the last context it "
        "was sent against the first):",
        "",
        "| reason | " + " | ".join(f"after, {r['latency']} s" for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    by_kind = [_by_kind(r.get("reasons", {})) for r in rows]
    for kind in dict.fromkeys(k for counts in by_kind for k in counts):
        lines.append(f"| {kind} | " + " | ".join(str(c.get(kind, 0)) for c in by_kind) + " |")
    slots: dict[str, int] = {}
    for reason, count in rows[0].get("reasons", {}).items():
        slot = reason.split(" | ", 1)[-1]
        slots[slot] = slots.get(slot, 0) + count
    lines += [
        "",
        f"By slot (after, {rows[0]['latency']} s): "
        + "; ".join(f"{slot} {n}" for slot, n in sorted(slots.items(), key=lambda i: -i[1]))
        + ". These are real updates of the same thing filed between a call and its chunk's "
        "turn (a strong model shown the newer value would have answered otherwise), and values "
        "said again after another replaced them; asking again is what keeps the store equal to "
        "the sequential run's. With chronological filing, every such pair costs either a second "
        "call or a wait: the pacing halves the calls in flight at each one, trading wall time "
        "for calls (a scratch run at 0.5 s without pacing: 220 calls = 1.83x, wall 3.0x; "
        "with it: 1.22x, 3.5x).",
        "",
    ]
    lines += _differences(rows)
    old = [r for r in _rows(before) if r["corpus"] == "dense" and not r["same_store"]]
    lines += [
        f"Before, {r['latency']} s: the store differs from the sequential run's." for r in old
    ]
    return [*lines, ""] if lines[-1] else lines


def _differences(rows: list[Row]) -> list[str]:
    """Where the after stores differ from the sequential run's, and why."""
    differing = [r for r in rows if not r["same_store"]]
    if not differing:
        return []
    lines = [
        "; ".join(
            f"After, {r['latency']} s: {r.get('files_differ', '?')} files differ from the "
            f"sequential run's, {len(r.get('active_differ', [])) // 2} current facts differ, "
            f"{len(r.get('left_out_stale', []))} lines were left out as said already on a "
            "context that no longer held at the chunk's turn (the sequential run filed them)"
            for r in differing
        )
        + ". The current facts that differ (first of these runs):",
        "",
        "| file | sequential run | concurrent run |",
        "|---|---|---|",
    ]
    changed: dict[str, dict[str, str]] = {}
    for line in differing[0].get("active_differ", []):
        sign, rest = line.split(" ", 1)
        path, fact = rest.split(": ", 1)
        changed.setdefault(path, {}).setdefault(sign, fact)
    for path, facts in changed.items():
        lines.append(f"| `{path}` | {facts.get('-', '—')} | {facts.get('+', '—')} |")
    lines += [
        "",
        "Such a line is a value said again after another was filed in between (staging "
        "cluster frozen, then red, then frozen again): the answer sent ahead was shown frozen "
        "as current and left the line out; by its turn red had superseded frozen.",
        "",
    ]
    return lines


def _by_kind(reasons: dict[str, int]) -> dict[str, int]:
    """The counts of `reasons` ("kind | slot") by kind, most first."""
    counts: dict[str, int] = {}
    for reason, count in reasons.items():
        kind = reason.split(" | ", 1)[0]
        counts[kind] = counts.get(kind, 0) + count
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def _rows(result: dict[str, Any] | None) -> list[Row]:
    return list(result["backfill"]) if result else []


def _key(row: Row) -> tuple[str, float]:
    return (str(row["corpus"]), float(row["latency"]))


def _find(result: dict[str, Any] | None, key: tuple[str, float]) -> Row | None:
    return next((r for r in _rows(result) if _key(r) == key), None)


def _ratio(row: Row) -> float:
    return float(row["calls"]) / max(1, int(row["sequential_calls"]))


def _wall_ratio(row: Row) -> float:
    return float(row["wall"]) / float(row["limit"])


def _calls(row: Row | None) -> str:
    if row is None:
        return "—"
    return f"{row['calls']} / {row['sequential_calls']} = {_ratio(row):.2f}x"


def _wall(row: Row | None) -> str:
    if row is None:
        return "—"
    return f"{row['wall']:.1f} s / {row['limit']:.1f} s = {_wall_ratio(row):.2f}x"


def _same(row: Row) -> str:
    return "yes" if row["same_store"] else "no"


def _kill(result: dict[str, Any] | None, depth: int) -> str:
    k = next((k for k in result["kills"] if k["depth"] == depth), None) if result else None
    if k is None:
        return "—"
    return ", ".join(f"{t['paid_again']} / {t['in_flight']}" for t in k.get("trials", [k]))


def _trials(result: dict[str, Any] | None, depth: int) -> str:
    k = next((k for k in result["kills"] if k["depth"] == depth), None) if result else None
    if k is None or "unanswered" not in k:
        return "—"
    return ", ".join(
        f"{t['paid_again']} / {t['unanswered']} + {t['in_transit']}" for t in k["trials"]
    )
