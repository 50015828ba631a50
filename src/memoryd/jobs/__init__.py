"""The application layer: each job put together from real parts, for `cli` and `daemon` to run.

Everything below this package (`extractors`, `rewrite`, `sources`, `store`, `state`, `llm`) takes
its collaborators as arguments; this is where the configuration, the process environment and
the clock become those collaborators:

- `environment`: what an entry point read from the outside world, and the state database;
- `lock`: the single-writer lock every writing job holds;
- `sources`: the configured transcript sources and their readers;
- `parts`: the git store and its check before a job, the cleaner, the secret scanner and the
  LLM client, built from the settings (the `anthropic` SDK is imported only for a client);
- `recovery`: finishing what a killed job of either kind left half-done, in one order;
- `reconcile`: the state database checked against the store (its cache) and rebuilt from it;
- `hooks`: what runs around a writing job (pull before, push and `index.commands` after);
- `session`: the one writing session every job that changes the store runs inside (settle,
  check, reconcile, pull; then push, `index.commands` and the search refresh);
- `heartbeat`, `rewrite`: one function per job, which the command line and the daemon call.
"""
