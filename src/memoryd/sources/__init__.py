"""Transcript sources: incremental readers for the agents' log formats, and text cleaning."""
