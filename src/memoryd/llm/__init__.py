"""The LLM client interface the pipeline calls, its Anthropic adapter, the price table, the
shared back-off when the API asks to slow down, and tool schemas made from the contract's models.

The offline `markers` provider is an extractor (`memoryd.extractors.markers`), not a client.
"""
