#!/usr/bin/env bash
# `make demo`: memoryd end to end, offline, on the bundled example transcripts.
# Creates demo-out/ (a fresh store and state), runs `init`, `check` and one heartbeat with the
# markers provider, then shows what was filed.
set -euo pipefail
cd "$(dirname "$0")/.."
config=examples/demo.toml
rm -rf demo-out
# The demo store gets a repository of its own: memoryd would otherwise treat it as a folder of
# this project's repository (a documented way to run it) and commit into the project.
mkdir -p demo-out/store
git init --quiet --initial-branch=main demo-out/store

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "memoryd init"
memoryd --config "$config" --log-format console init

step "memoryd check"
memoryd --config "$config" --log-format console check

step "memoryd heartbeat --dry-run (what would be sent)"
memoryd --config "$config" --log-format console heartbeat --dry-run

step "memoryd heartbeat (markers provider, no LLM)"
memoryd --config "$config" --log-format console heartbeat

step "the store after one heartbeat"
(cd demo-out/store && find . -path ./.git -prune -o -type f -print | sort)

step "an entity's facts: life/areas/people/dana-whitfield/items.json"
cat demo-out/store/life/areas/people/dana-whitfield/items.json

step "memoryd rewrite (the weekly summaries; without an LLM, the deterministic template)"
memoryd --config "$config" --log-format console rewrite

step "its summary: life/areas/people/dana-whitfield/summary.md"
cat demo-out/store/life/areas/people/dana-whitfield/summary.md

step "life/index.md"
cat demo-out/store/life/index.md

step "a daily note: memory/2026-11-24.md (the leaked token was redacted)"
cat demo-out/store/memory/2026-11-24.md

step "a routine's skills: agents/researcher/routines/research-expansion-skills.md"
cat demo-out/store/agents/researcher/routines/research-expansion-skills.md

step "git log"
git -C demo-out/store log --format='%h %s%n%b'

step "a second heartbeat finds nothing new and commits nothing"
memoryd --config "$config" --log-format console heartbeat
git -C demo-out/store log --oneline

step "memoryd context --agent chief-of-staff --budget 800 (what an agent loads at the start of a run)"
memoryd --config "$config" --log-format console context --agent chief-of-staff --budget 800

step "memoryd search Dana (full-text, decay-ranked; the facts found count as accessed)"
memoryd --config "$config" --log-format console search Dana --limit 5

step "memoryd status"
memoryd --config "$config" --log-format console status
