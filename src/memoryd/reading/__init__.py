"""Reading the memory: what agents load and look up (docs/cli.md, Reading the memory).

`context` builds the start-of-run bundle, `search` keeps a full-text index of the store (a cache
beside the state database, rebuilt from the store at will) and ranks it with recency decay,
`accesses` queues the facts agents read so that the next heartbeat counts them. Nothing here
writes to the store or takes the writer's lock: it reads the store's files as they are.
"""
