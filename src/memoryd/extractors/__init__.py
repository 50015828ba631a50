"""The heartbeat's stateless steps: intake, chunking, context, extraction (LLM or markers), the
answer contract, the safety gate, apply, and recovery of an interrupted apply.

They take their collaborators as arguments and keep no run state; the engine that runs them over
a heartbeat's chunks, in its crash-safe order, is `memoryd.heartbeat`.
"""
