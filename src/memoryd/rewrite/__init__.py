"""The weekly rewrite (docs/store-format.md, Decay and summaries): decay tiers, summaries,
consolidation, batches.

`tiers` (the decay rule) → `select` (which entities changed) → `summary` (request, validation,
template), `batch` (custom ids, matching results) and `consolidate` + `bounded` (files past their
bound) → `engine` (one run, asking the model through `asking`, spending through `ledger`,
counted in `report`) → `job` (wiring from the settings, dry-run plan, batch poll, `explain`) and
`commands` (the CLI).
"""
