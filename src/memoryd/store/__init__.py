"""The git-backed memory store: entities and facts, daily notes, tacit knowledge, skills."""

# The entity catalogue's cache in the state directory (`memoryd.store.catalog._cache`; its
# snapshot files sit beside it). Named here so that a job can say where it goes without
# importing the catalogue's modules, which an idle heartbeat never needs.
CATALOG_CACHE_FILE = "catalog-cache.json"
