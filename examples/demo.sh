#!/usr/bin/env bash
# `make demo`: memoryd end to end, offline, on the bundled example transcripts.
# Creates demo-out/ (a fresh store and state), runs `init`, `check` and one heartbeat with the
# markers provider, then shows what was filed.
set -euo pipefail
cd "$(dirname "$0")/.."
config=examples/demo.toml
rm -rf demo-out
mkdir -p demo-out

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "memoryd check"
memoryd --config "$config" --log-format console check

step "memoryd init"
memoryd --config "$config" --log-format console init

if memoryd --config "$config" heartbeat --help >/dev/null 2>&1 &&
   memoryd --config "$config" --log-format console heartbeat; then
  step "the store after one heartbeat"
  (cd demo-out/store && find . -path ./.git -prune -o -type f -print | sort)
  step "an entity's facts"
  cat demo-out/store/life/areas/people/dana-whitfield/items.json 2>/dev/null || true
  step "a daily note"
  cat demo-out/store/memory/2026-11-24.md 2>/dev/null || true
  step "git log"
  git -C demo-out/store log --stat --format='%h %s%n%b' | head -60
else
  step "the store skeleton"
  (cd demo-out/store && find . -path ./.git -prune -o -type f -print | sort)
  git -C demo-out/store log --oneline
fi
