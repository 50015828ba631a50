"""The git-backed memory store: entities and facts, daily notes, tacit knowledge, skills."""
