"""The weekly rewrite (DESIGN §1.4, issue 5): decay tiers, summaries, consolidation, batches.

`tiers` (the decay rule) → `select` (which entities changed) → `summary` (request, validation,
template) and `consolidate` (bounded skills and tacit files) → `engine` (one run) → `job` (the
wiring from settings) and `commands` (the CLI).
"""
