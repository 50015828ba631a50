"""The LLM client interface, its Anthropic adapter and the offline markers provider."""
