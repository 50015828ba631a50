"""The trailer of the commits the sync makes itself (a merge by meaning, the index or the
summaries regenerated after it), in a module of its own so that naming it imports no merge code."""

SYNC_TRAILER = "Memoryd-Sync"
