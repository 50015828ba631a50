"""The parts a job is built from, each made from the settings: the git store, the cleaner, the
secret scanner and scrubber, and the LLM client with the extractor over it (the source readers
are in `memoryd.jobs.sources`). Each job opens the git store afresh and lets it go when done.

The `anthropic` SDK is imported here only when a client is built, so commands that call no
model (`--version`, `status`, `check`, `explain`, a dry run) start without paying for it. In the
same way the cleaner and the scrubber import their modules on their first use: a heartbeat with
nothing new cleans nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from memoryd.collector import long_lived
from memoryd.errors import ConfigError
from memoryd.extractors.extract import Extractor, MarkersExtractor
from memoryd.extractors.llm_extractor import LLMExtractor
from memoryd.gitrepo import GitIdentity, GitStore
from memoryd.jobs.environment import Clock, Environment
from memoryd.llm.base import ToolRequest, ToolResult
from memoryd.redaction import redact, secret_kinds
from memoryd.settings import Settings, find_api_key, find_base_url
from memoryd.sources.model import Conversation
from memoryd.store.layout import check_store, open_store

if TYPE_CHECKING:
    from memoryd.llm.anthropic_client import AnthropicClient


def git_store(settings: Settings, clock: Clock) -> GitStore:
    identity = GitIdentity(settings.git.author_name, settings.git.author_email)
    return GitStore(
        settings.store.path, identity, clock, command_timeout_seconds=settings.git.timeout_seconds
    )


def prepare_store(git: GitStore, *, dry_run: bool, sweep: bool = True) -> None:
    """Check the store before a job: it must be a memoryd store of a format this memoryd reads,
    in a folder its repository does not ignore. A real run also migrates an older format and
    sweeps leftover temporary files; a dry run changes nothing. Raise StoreError (run `memoryd
    init`), StoreFormatError or IgnoredStoreError. Without `sweep`, the store is not walked for
    temporary files (a heartbeat's foreign-edits step removes the ones git lists)."""
    if dry_run:
        check_store(git.store_root)
        git.check_not_ignored()
    else:
        open_store(git.store_root, git, sweep=sweep)


@contextmanager
def llm_client_for(settings: Settings, env: Environment) -> Iterator[AnthropicClient | None]:
    """The Anthropic client the configuration asks for (None with `provider = "markers"`),
    closed with its connections on exit. Raise ConfigError when no API key can be found."""
    if settings.llm.provider == "markers":
        yield None
        return
    api_key, where = find_api_key(settings, env.environ)
    if api_key is None:
        raise ConfigError(None, [f"At 'llm': no API key found ({where}); run `memoryd check`"])
    with long_lived():  # the SDK's classes (`memoryd.collector`)
        from memoryd.llm.anthropic_client import AnthropicClient  # noqa: PLC0415 - see the docstring

    with AnthropicClient(
        api_key=api_key,
        base_url=find_base_url(settings, env.environ),
        timeout_seconds=settings.llm.timeout_seconds,
        max_attempts=settings.llm.max_attempts,
    ) as client:
        yield client


def make_scrubber(settings: Settings) -> Callable[[str], str]:
    """Redact secrets from a text (the configured extra patterns included), and remove the
    characters nothing memoryd writes may carry (`memoryd.charsafe`)."""
    patterns = tuple(settings.cleaning.extra_patterns)

    def scrub(text: str) -> str:
        from memoryd.charsafe import strip_unsafe  # noqa: PLC0415 - see the module docstring

        return redact(strip_unsafe(text), patterns)

    return scrub


def make_scanner(settings: Settings) -> Callable[[str], list[str]]:
    """The kinds of secret found in a text (for the commit-time secret scan)."""
    patterns = tuple(settings.cleaning.extra_patterns)
    return lambda text: secret_kinds(text, patterns)


def make_cleaner(settings: Settings) -> Callable[[Conversation], Conversation | None]:
    """Clean a conversation before it leaves the machine; None when nothing is left of it."""
    patterns = tuple(settings.cleaning.extra_patterns)
    limit = settings.cleaning.tool_output_chars

    def clean(conversation: Conversation) -> Conversation | None:
        from memoryd.sources.clean import clean_conversation  # noqa: PLC0415 - see the docstring

        cleaned, _stats = clean_conversation(
            conversation, extra_patterns=patterns, tool_output_chars=limit
        )
        return cleaned if cleaned.turns else None

    return clean


@contextmanager
def extractor_for(settings: Settings, env: Environment) -> Iterator[Extractor]:
    """The configured extractor: the model through the API, or the markers provider.

    The API client (and with it the `anthropic` SDK) is only built when the first chunk is
    sent, so a heartbeat with nothing new never imports it; a missing key is reported at once
    all the same."""
    scrub = make_scrubber(settings)
    if settings.llm.provider == "markers":
        yield MarkersExtractor(scrub=scrub)
        return
    with _LazyClient(settings, env) as client:
        yield LLMExtractor(
            client,
            model=settings.llm.model,
            max_tokens=settings.llm.max_output_tokens,
            scrub=scrub,
        )


class _LazyClient:
    """An `LLMClient` that opens the Anthropic client on its first call (from any thread) and
    closes it on exit. Raise ConfigError on entry when no API key can be found."""

    def __init__(self, settings: Settings, env: Environment) -> None:
        self._settings = settings
        self._env = env
        self._lock = threading.Lock()
        self._stack = ExitStack()
        self._client: AnthropicClient | None = None

    def __enter__(self) -> _LazyClient:
        api_key, where = find_api_key(self._settings, self._env.environ)
        if not api_key:
            raise ConfigError(None, [f"At 'llm': no API key found ({where}); run `memoryd check`"])
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stack.close()

    def call_tool(self, request: ToolRequest) -> ToolResult:
        with self._lock:
            if self._client is None:
                client = self._stack.enter_context(llm_client_for(self._settings, self._env))
                assert client is not None  # noqa: S101 - the provider is not "markers"
                self._client = client
        return self._client.call_tool(request)
