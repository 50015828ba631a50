"""Helpers shared by several test modules: builders, sample data, and the workspace harness.

A test module imports what it shares with another from here (or from `tests.fakes`, the
stand-ins for outside services, or from a conftest), never from another test module, so a
test file can be moved, renamed or deleted without breaking the others.
"""
