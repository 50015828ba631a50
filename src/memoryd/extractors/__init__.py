"""The heartbeat pipeline steps: chunking, context, extraction, heuristics, apply."""
